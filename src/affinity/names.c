/* names.c — the affinity stage's option names, for the command line, the
 * bindings and the messages: index = enum value (nlembed/affinity.h). */
#include "affinity_internal.h"

static const char *const kind_names[] = {"gaussian", "binary", "inverse", "self-tuning"};
static const char *const root_names[] = {"halley", "euler", "newton", "bisection",
                                         "brent",  "ridder", "classic", "householder"};
static const char *const order_names[] = {"mst", "msp", "density", "sequential", "random", "bounds"};
static const char *const wneg_names[] = {"uniform", "sqdist", "knn"};

const char *nle_affinity_kind_name(nle_affinity_kind kind) {
  return nle__enum_name(kind_names, NLE__COUNT(kind_names), false, (int)kind);
}
int nle_affinity_kind_parse(const char *name) {
  return nle__enum_parse(kind_names, NLE__COUNT(kind_names), false, name);
}
const char *nle_root_method_name(nle_root_method root) {
  return nle__enum_name(root_names, NLE__COUNT(root_names), false, (int)root);
}
int nle_root_method_parse(const char *name) { return nle__enum_parse(root_names, NLE__COUNT(root_names), false, name); }
const char *nle_ea_order_name(nle_ea_order order) {
  return nle__enum_name(order_names, NLE__COUNT(order_names), false, (int)order);
}
int nle_ea_order_parse(const char *name) { return nle__enum_parse(order_names, NLE__COUNT(order_names), false, name); }
const char *nle_wneg_name(nle_wneg_kind kind) {
  return nle__enum_name(wneg_names, NLE__COUNT(wneg_names), false, (int)kind);
}
int nle_wneg_parse(const char *name) { return nle__enum_parse(wneg_names, NLE__COUNT(wneg_names), false, name); }
