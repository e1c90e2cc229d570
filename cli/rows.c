/* rows.c — the options of the tool's own commands from their rows
 * (cli_row): getopt's tables, the value checked and stored in the
 * command's settings struct, and --help. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

enum { MAX_ROWS = 48 };

/* "bulk or all", "a, b or c". */
static void choice_list(const char *const *choices, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; choices[i] && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i == 0 ? "" : choices[i + 1] ? ", " : " or ", choices[i]);
}

static int take_choice(cli_env *env, const cli_row *r, const char *arg, int *field) {
  for (int i = 0; r->choices[i]; i++)
    if (!strcmp(r->choices[i], arg)) {
      *field = i;
      return 0;
    }
  char list[256];
  choice_list(r->choices, list, sizeof list);
  return cli_usage_error(env->command, "--%s takes %s, not \"%s\"", r->name, list, arg);
}

/* The value of row r into its field; 0, or the usage error's exit code. */
static int take_value(cli_env *env, const cli_row *r, const char *arg, void *settings) {
  char *field = (char *)settings + r->field;
  char label[64];
  if (r->short_name) snprintf(label, sizeof label, "-%c", r->short_name);
  else snprintf(label, sizeof label, "--%s", r->name);
  long long lo = (long long)r->lo, hi = r->hi < (double)LLONG_MAX ? (long long)r->hi : LLONG_MAX;
  switch (r->kind) {
  case CLI_INT: return cli_int_field(env->command, label, arg, lo, hi, false, (int *)field);
  case CLI_INT64: {
    long long v;
    int rc = cli_int_arg(env->command, label, arg, lo, hi, false, &v);
    if (!rc) *(int64_t *)field = v;
    return rc;
  }
  case CLI_NUMBER:
    return cli_real_arg(env->command, label, arg, r->lo, r->lo_open, r->hi, r->hi_open, false, (double *)field);
  case CLI_SWITCH: *(bool *)field = true; return 0;
  case CLI_TEXT: *(const char **)field = arg; return 0;
  case CLI_FILES: {
    cli_files *files = (cli_files *)field;
    if (files->n == CLI_MAX_FILES) return cli_usage_error(env->command, "at most %d %s files", CLI_MAX_FILES, label);
    files->names[files->n++] = arg;
    return 0;
  }
  case CLI_CHOICE: return take_choice(env, r, arg, (int *)field);
  }
  return 2;
}

/* --help: head, a line a row (a choice row lists its values), the common
 * options. */
static void help_text(const char *head, const cli_row *rows, char *help, size_t cap) {
  size_t used = (size_t)snprintf(help, cap, "%s\nOptions:\n", head);
  for (int i = 0; rows[i].name && used < cap; i++) {
    const cli_row *r = &rows[i];
    char list[256] = "";
    if (r->choices) choice_list(r->choices, list, sizeof list);
    used += cli_help_line(help + used, cap - used, r->short_name, r->name, r->metavar, r->help,
                          r->values ? r->values : list, r->def);
  }
  if (used < cap) snprintf(help + used, cap - used, "\n%s", CLI_COMMON_HELP);
}

int cli_read_options(cli_env *env, int argc, char **argv, const char *head, const cli_row *rows, void *settings) {
  static char help[1 << 15];
  static struct option longopts[MAX_ROWS + 16];
  static const struct option common[] = {CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  char shortopts[2 * MAX_ROWS + 1] = "";
  int n = 0;
  for (; rows[n].name && n < MAX_ROWS; n++) {
    bool takes_value = rows[n].kind != CLI_SWITCH;
    longopts[n] = (struct option){rows[n].name, takes_value ? required_argument : no_argument, 0, OPT_COMMAND_BASE + n};
    if (rows[n].short_name) {
      size_t len = strlen(shortopts);
      shortopts[len] = rows[n].short_name;
      shortopts[len + 1] = takes_value ? ':' : '\0';
    }
  }
  memcpy(longopts + n, common, sizeof common);
  help_text(head, rows, help, sizeof help);
  env->help = help;
  int c;
  while ((c = cli_next_option(env, argc, argv, shortopts, longopts)) != -1) {
    int row = c - OPT_COMMAND_BASE;
    for (int i = 0; i < n; i++)
      if (rows[i].short_name == c) row = i;
    env->rc = row >= 0 && row < n ? take_value(env, &rows[row], optarg, settings) : 2;
  }
  return env->rc;
}
