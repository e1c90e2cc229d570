/* status.c — names and messages of the status codes, generated from the one
 * list in nlembed.h. */
#include "nlembed.h"

const char *nle_status_name(nle_status s) {
  switch (s) {
#define NLE__STATUS_NAME(name, code, msg) \
  case NLE_##name:                        \
    return #name;
    NLE_STATUS_MAP(NLE__STATUS_NAME)
#undef NLE__STATUS_NAME
  }
  return "UNKNOWN";
}

const char *nle_status_message(nle_status s) {
  switch (s) {
#define NLE__STATUS_MSG(name, code, msg) \
  case NLE_##name:                       \
    return msg;
    NLE_STATUS_MAP(NLE__STATUS_MSG)
#undef NLE__STATUS_MSG
  }
  return "unknown status";
}
