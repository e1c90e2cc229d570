/* names.c — the names of enumerated options, read from one table per enum
 * (the value is the index; NLE_AUTO is "auto" where an enum has it), so a
 * name and its parse cannot drift apart. */
#include "internal.h"

#include <string.h>

const char *nle__enum_name(const char *const *names, size_t count, bool has_auto, int value) {
  if (has_auto && value == NLE_AUTO) return "auto";
  return value >= 0 && (size_t)value < count ? names[value] : "unknown";
}

int nle__enum_parse(const char *const *names, size_t count, bool has_auto, const char *name) {
  if (!name) return -1;
  if (has_auto && !strcmp(name, "auto")) return NLE_AUTO;
  for (size_t i = 0; i < count; i++)
    if (!strcmp(name, names[i])) return (int)i;
  return -1;
}
