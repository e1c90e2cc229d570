/* names.c — the affinity stage's option names, for the command line, the
 * bindings and the messages: index = enum value (nlembed/affinity.h). */
#include "affinity_internal.h"

static const char *const kind_names[] = {"gaussian", "binary", "inverse", "self-tuning", "entropic"};
static const char *const root_names[] = {"halley", "euler", "newton", "bisection",
                                         "brent",  "ridder", "classic", "householder"};
static const char *const order_names[] = {"mst", "msp", "density", "sequential", "random", "bounds"};
static const char *const wneg_names[] = {"uniform", "sqdist", "knn"};

NLE__ENUM_NAMES(nle_affinity_kind_name, nle_affinity_kind_parse, nle_affinity_kind, kind_names, false)
NLE__ENUM_NAMES(nle_root_method_name, nle_root_method_parse, nle_root_method, root_names, false)
NLE__ENUM_NAMES(nle_ea_order_name, nle_ea_order_parse, nle_ea_order, order_names, false)
NLE__ENUM_NAMES(nle_wneg_name, nle_wneg_parse, nle_wneg_kind, wneg_names, false)
