/* names.c — the affinity stage's option names, for the command line, the
 * bindings and the messages: index = enum value (nlembed/affinity.h). */
#include "affinity_internal.h"


NLE__ENUM_NAMES(nle_affinity_kind_name, nle_affinity_kind_parse, nle_affinity_kind, NLE_AFFINITY_KIND_MAP, NLE_AFF_COUNT, false)
NLE__ENUM_NAMES(nle_root_method_name, nle_root_method_parse, nle_root_method, NLE_ROOT_METHOD_MAP, NLE_ROOT_COUNT, false)
NLE__ENUM_NAMES(nle_ea_order_name, nle_ea_order_parse, nle_ea_order, NLE_EA_ORDER_MAP, NLE_ORDER_COUNT, false)
NLE__ENUM_NAMES(nle_wneg_name, nle_wneg_parse, nle_wneg_kind, NLE_WNEG_MAP, NLE_WNEG_COUNT, false)
