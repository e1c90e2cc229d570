/* test_io.c — readers (text, .npy, IDX, gzip), labels, writers and atomic
 * output, including malformed files. */
#include "harness.h"
#include "../src/core/internal.h"
#include "../src/io/model_file.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

/* Reads `text` as a file through the public reader; returns the status. */
static nle_status read_text(nle_ctx *ctx, const char *text, const nle_read_opts *o, nle_dataset **ds) {
  const char *p = test_write_file("input.txt", text, strlen(text));
  return nle_dataset_read(ctx, p, o, ds);
}

static void text_formats(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds;
  nle_test_ok(read_text(ctx, "a,b,c\n1,2,3\n4.5,-6e1,7\n", NULL, &ds));
  nle_test(ds->X->rows == 2 && ds->X->cols == 3 && ds->X->data[4] == -60.0f && !ds->labels);
  nle_dataset_free(&ds);
  nle_test_ok(read_text(ctx, "1\t2\n3\t4\r\n\n", NULL, &ds));
  nle_test(ds->X->rows == 2 && ds->X->cols == 2 && ds->X->data[3] == 4.0f);
  nle_dataset_free(&ds);
  nle_test_ok(read_text(ctx, "# comment\n 1  2   3\n4 5 6\n", NULL, &ds));
  nle_test(ds->X->rows == 2 && ds->X->cols == 3 && ds->X->data[5] == 6.0f);
  nle_dataset_free(&ds);
  nle_test_ok(read_text(ctx, "\"x\";\"y\"\n\"1\";2\n3;4\n", NULL, &ds));
  nle_test(ds->X->rows == 2 && ds->X->cols == 2 && ds->X->data[0] == 1.0f);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

static void text_labels(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_read_opts o;
  nle_read_opts_init(&o);
  o.label_column = NLE_LABEL_LAST;
  nle_dataset *ds;
  nle_test_ok(read_text(ctx, "x,y,kind\n1,2,dog\n3,4,cat\n5,6,dog\n", &o, &ds));
  nle_test(ds->X->cols == 2 && ds->n_classes == 2);
  nle_test(ds->labels[0] == 1 && ds->labels[1] == 0 && ds->labels[2] == 1);
  nle_test(!strcmp(ds->class_names[0], "cat") && !strcmp(ds->class_names[1], "dog"));
  nle_dataset_free(&ds);
  /* a quoted field holding the delimiter is one field */
  nle_test_ok(read_text(ctx, "label,x\n\"Paris, FR\",1\n\"Oslo, NO\",2\n\"Paris, FR\",3\n", NULL, &ds));
  nle_test(ds && ds->X->rows == 3 && ds->X->cols == 1 && ds->X->data[2] == 3.0f && ds->n_classes == 2);
  nle_test(ds && ds->labels[0] == 1 && ds->labels[1] == 0 && ds->labels[2] == 1);
  nle_test(ds && !strcmp(ds->class_names[0], "Oslo, NO") && !strcmp(ds->class_names[1], "Paris, FR"));
  nle_dataset_free(&ds);
  o.label_column = 0; /* integer labels in front, no header */
  nle_test_ok(read_text(ctx, "3,1.5\n0,2.5\n", &o, &ds));
  /* the classes are the values present (0 and 3), kept as names */
  nle_test(ds->labels[0] == 1 && ds->labels[1] == 0 && ds->n_classes == 2 && ds->X->data[1] == 2.5f);
  nle_test(ds->class_names && !strcmp(ds->class_names[0], "0") && !strcmp(ds->class_names[1], "3"));
  nle_dataset_free(&ds);
  /* A separate label file: count must match. */
  const char *lab = test_write_file("labels.txt", "1\n2\n", 4);
  int32_t *labels;
  int64_t n;
  int32_t classes;
  nle_test_ok(nle_labels_read(ctx, lab, NULL, 2, &labels, &n, &classes, NULL));
  nle_test(n == 2 && labels[0] == 0 && labels[1] == 1 && classes == 2);
  free(labels);
  nle_test(nle_labels_read(ctx, lab, NULL, 3, &labels, &n, &classes, NULL) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "2 labels for 3 points") != NULL);
  const char *wide = test_write_file("wide.txt", "1,2\n3,4\n", 8);
  nle_test(nle_labels_read(ctx, wide, NULL, 0, &labels, &n, &classes, NULL) == NLE_ERR_FORMAT);
  nle_ctx_free(&ctx);
}

/* Issue 19's readers: a UTF-8 byte-order mark is skipped (it dropped the
 * first row); a first row of numbers beside words is refused, naming the
 * field, instead of taken as a header (which dropped a data row); a header
 * column named label/class/y/target is taken as the labels (with a note),
 * --label-column none keeps it a feature; a data file's label column serves
 * nle_labels_read. */
static void text_bom_header_labels(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds = NULL;
  nle_test_ok(read_text(ctx, "\xef\xbb\xbf" "1,2\n3,4\n5,7\n", NULL, &ds));
  nle_test(ds && ds->X->rows == 3 && ds->X->data[0] == 1.0f);
  nle_dataset_free(&ds);
  nle_test_ok(read_text(ctx, "\xef\xbb\xbf" "a,b\n3,4\n", NULL, &ds));
  nle_test(ds && ds->X->rows == 1);
  nle_dataset_free(&ds);
  nle_test(read_text(ctx, "1,2x,3\n4,5,6\n", NULL, &ds) == NLE_ERR_FORMAT && !ds);
  nle_test(strstr(nle_ctx_error(ctx), "line 1: field 2 (\"2x\") is not a number but 2 other fields are") != NULL);
  nle_test(read_text(ctx, "x,y,3\n4,5,6\n", NULL, &ds) == NLE_ERR_FORMAT && !ds);
  nle_test_ok(read_text(ctx, "px1,px2,Label\n1,2,7\n3,4,9\n", NULL, &ds));
  nle_test(ds && ds->X->cols == 2 && ds->labels && ds->labels[1] == 1 && !strcmp(ds->class_names[1], "9") &&
           ds->X->data[3] == 4.0f);
  nle_dataset_free(&ds);
  nle_test_ok(read_text(ctx, "0,1,label\n1,2,cat\n3,4,dog\n", NULL, &ds)); /* numbered columns and a label */
  nle_test(ds && ds->X->cols == 2 && ds->labels && !strcmp(ds->class_names[ds->labels[1]], "dog"));
  nle_dataset_free(&ds);
  nle_read_opts o;
  nle_read_opts_init(&o);
  nle_test(o.label_column == NLE_LABEL_AUTO);
  o.label_column = NLE_LABEL_NONE;
  nle_test_ok(read_text(ctx, "px1,px2,target\n1,2,7\n3,4,9\n", &o, &ds));
  nle_test(ds && ds->X->cols == 3 && !ds->labels);
  nle_dataset_free(&ds);
  const char *data = test_write_file("with_labels.csv", "a,b,class\n1,2,x\n3,4,y\n5,6,x\n", 28);
  int32_t *labels = NULL, classes = 0;
  int64_t n = 0;
  char **names = NULL;
  nle_read_opts_init(&o);
  nle_test_ok(nle_labels_read(ctx, data, &o, 3, &labels, &n, &classes, &names));
  nle_test(n == 3 && classes == 2 && labels && labels[1] == 1 && names && !strcmp(names[0], "x"));
  free(labels);
  nle_class_names_free(&names, classes);
  nle_test(nle_labels_read(ctx, data, NULL, 3, &labels, &n, &classes, NULL) == NLE_ERR_FORMAT);
  nle_ctx_free(&ctx);
}

/* Each malformed text gives its status and names the line. */
static void text_malformed(void) {
  struct {
    const char *text, *expect;
    nle_status s;
  } cases[] = {
      {"", "empty file", NLE_ERR_FORMAT},
      {"\n\n# only a comment\n", "empty file", NLE_ERR_FORMAT},
      {"a,b\n", "no data rows", NLE_ERR_FORMAT},
      {"1,2\n3,4,5\n", "line 2: 3 fields where the first row has 2", NLE_ERR_FORMAT},
      {"1,2\n3\n", "line 2: 1 fields", NLE_ERR_FORMAT},
      {"1,2\n3,x4\n", "line 2, field 2: not a number", NLE_ERR_FORMAT},
      {"1,2\n3,\n", "line 2, field 2: not a number", NLE_ERR_FORMAT},
      {"1,2\nnan,4\n", "line 2, field 1: NaN", NLE_ERR_VALUE},
      {"1,2\n\n3,inf\n", "line 3, field 2: infinite", NLE_ERR_VALUE},
      {"1,2\n3,1e300\n", "line 2, field 2: infinite (or beyond float range)", NLE_ERR_VALUE},
      {"1,2\n3\0,4\n", "NUL byte", NLE_ERR_FORMAT},
  };
  nle_ctx *ctx = test_ctx(1);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    nle_dataset *ds = NULL;
    size_t len = strlen(cases[i].text);
    if (strstr(cases[i].expect, "NUL")) len = 8;
    const char *p = test_write_file("bad.csv", cases[i].text, len);
    nle_status s = nle_dataset_read(ctx, p, NULL, &ds);
    if (!nle_test(s == cases[i].s && ds == NULL)) printf("  case %zu: status %d\n", i, s);
    if (!nle_test(strstr(nle_ctx_error(ctx), cases[i].expect) && strstr(nle_ctx_error(ctx), "bad.csv")))
      printf("  case %zu: message \"%s\"\n", i, nle_ctx_error(ctx));
  }
  nle_dataset *ds = NULL;
  nle_test(nle_dataset_read(ctx, test_path("missing.csv"), NULL, &ds) == NLE_ERR_IO);
  nle_test(strstr(nle_ctx_error(ctx), "No such file") != NULL);
  nle_test(nle_dataset_read(ctx, test_tmpdir(), NULL, &ds) == NLE_ERR_IO);
  nle_ctx_free(&ctx);
}

/* Builds a .npy file by hand (independently of the writer). */
static size_t make_npy(uint8_t *buf, const char *dict, const void *data, size_t len) {
  size_t n = strlen(dict), total = 10 + n + 1, pad = (64 - total % 64) % 64, hlen = n + pad + 1;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (uint8_t)(hlen & 0xff);
  buf[9] = (uint8_t)(hlen >> 8);
  memcpy(buf + 10, dict, n);
  memset(buf + 10 + n, ' ', pad);
  buf[10 + n + pad] = '\n';
  memcpy(buf + 10 + hlen, data, len);
  return 10 + hlen + len;
}

static void npy_read(void) {
  nle_ctx *ctx = test_ctx(1);
  uint8_t buf[512];
  nle_dataset *ds;
  double d[6] = {1, 2, 3, 4, 5, 6};
  size_t len = make_npy(buf, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", d, sizeof d);
  nle_test_ok(nle_parse_npy(ctx, "f.npy", buf, len, &ds));
  /* Fortran order: column-major 1..6 is rows (1,3,5), (2,4,6). */
  nle_test(ds->X->data[0] == 1 && ds->X->data[1] == 3 && ds->X->data[3] == 2 && ds->X->data[5] == 6);
  nle_dataset_free(&ds);
  uint8_t be[16] = {0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
  len = make_npy(buf, "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", be, sizeof be);
  nle_test_ok(nle_parse_npy(ctx, "be.npy", buf, len, &ds));
  nle_test(ds->X->rows == 2 && ds->X->cols == 1 && ds->X->data[0] == 1 && ds->X->data[1] == -2);
  nle_dataset_free(&ds);
  uint8_t img[8] = {0, 1, 2, 3, 4, 5, 6, 255};
  len = make_npy(buf, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 2), }", img, sizeof img);
  nle_test_ok(nle_parse_npy(ctx, "img.npy", buf, len, &ds));
  nle_test(ds->X->rows == 2 && ds->X->cols == 4 && ds->X->data[7] == 255);
  nle_dataset_free(&ds);
  float f[2] = {1.0f, NAN};
  len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", f, sizeof f);
  nle_test(nle_parse_npy(ctx, "nan.npy", buf, len, &ds) == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "row 0, column 1") != NULL);
  len = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d, sizeof d);
  nle_test(nle_parse_npy(ctx, "cut.npy", buf, len - 1, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "truncated .npy data") != NULL);
  nle_test(nle_parse_npy(ctx, "cut.npy", buf, 40, &ds) == NLE_ERR_FORMAT);
  buf[1] = 'X';
  nle_test(nle_parse_npy(ctx, "magic.npy", buf, len, &ds) == NLE_ERR_FORMAT);
  len = make_npy(buf, "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", d, 16);
  nle_test(nle_parse_npy(ctx, "complex.npy", buf, len, &ds) == NLE_ERR_UNSUPPORTED);
  len = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }", d, 0);
  nle_test(nle_parse_npy(ctx, "empty.npy", buf, len, &ds) == NLE_ERR_FORMAT);
  /* Version 2: a 4-byte header length. Exact, it reads; one byte past the
   * end of the file, it is refused (not read beyond the buffer). */
  const char v2dict[] = "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }   \n";
  size_t hlen = sizeof v2dict - 1;
  memcpy(buf, "\x93NUMPY\x02\x00", 8);
  for (int b = 0; b < 4; b++) buf[8 + b] = (uint8_t)(hlen >> (8 * b));
  memcpy(buf + 12, v2dict, hlen);
  memcpy(buf + 12 + hlen, "\x07\x08\x09", 3);
  len = 12 + hlen + 3;
  uint8_t *exact = malloc(len); /* a heap copy of the file's size: ASan sees any read past it */
  memcpy(exact, buf, len);
  nle_test_ok(nle_parse_npy(ctx, "v2.npy", exact, len, &ds));
  nle_test(ds && ds->X->rows == 3 && ds->X->data[2] == 9.0f);
  nle_dataset_free(&ds);
  size_t past = len - 12 + 1;
  for (int b = 0; b < 4; b++) exact[8 + b] = (uint8_t)(past >> (8 * b));
  nle_test(nle_parse_npy(ctx, "v2past.npy", exact, len, &ds) == NLE_ERR_FORMAT && !ds);
  nle_test(strstr(nle_ctx_error(ctx), "truncated .npy header") != NULL);
  past = len - 12; /* the header takes the whole file: no data */
  for (int b = 0; b < 4; b++) exact[8 + b] = (uint8_t)(past >> (8 * b));
  nle_test(nle_parse_npy(ctx, "v2all.npy", exact, len, &ds) == NLE_ERR_FORMAT && !ds);
  free(exact);
  nle_ctx_free(&ctx);
}

/* Labels as classes (issue 34): the distinct values in increasing order,
 * as scikit-learn's LabelEncoder (np.unique's inverse, written out here),
 * whatever the source: integers with gaps, negative ones, whole floats,
 * strings; from the encoder, text, .npy (float64, int64) and a data
 * file's label column. NaN, fractions and a wrong count are refused
 * naming the file and the 0-based row. */
static void label_encoding(void) {
  nle_ctx *ctx = test_ctx(1);
  /* the encoder: {10, -1, 7, 10, 1000000} -> classes -1 < 7 < 10 < 1e6 */
  const int32_t raw[5] = {10, -1, 7, 10, 1000000};
  int32_t codes[5], C = 0, *values = NULL;
  nle_test_ok(nle_labels_encode(ctx, NULL, raw, 5, codes, &C, &values));
  nle_test(C == 4 && codes[0] == 2 && codes[1] == 0 && codes[2] == 1 && codes[3] == 2 && codes[4] == 3 && values &&
           values[0] == -1 && values[1] == 7 && values[2] == 10 && values[3] == 1000000);
  free(values);
  int32_t same[5];
  memcpy(same, raw, sizeof same); /* codes may alias the labels */
  nle_test_ok(nle_labels_encode(ctx, NULL, same, 5, same, &C, NULL));
  nle_test(!memcmp(same, codes, sizeof codes));
  /* labels 0..C-1, all present: unchanged */
  const int32_t dense[4] = {2, 0, 1, 0};
  nle_test_ok(nle_labels_encode(ctx, NULL, dense, 4, codes, &C, NULL));
  nle_test(C == 3 && !memcmp(codes, dense, sizeof dense));
  /* text: 1-based labels with a gap and a negative one, numeric order ("10" after "9") */
  const char *t = test_write_file("labels_gap.txt", "10\n9\n-1\n10\n3\n", strlen("10\n9\n-1\n10\n3\n"));
  int32_t *labels = NULL;
  int64_t n = 0;
  char **names = NULL;
  nle_test_ok(nle_labels_read(ctx, t, NULL, 5, &labels, &n, &C, &names));
  nle_test(C == 4 && labels && labels[0] == 3 && labels[1] == 2 && labels[2] == 0 && labels[3] == 3 && labels[4] == 1 &&
           names && !strcmp(names[0], "-1") && !strcmp(names[1], "3") && !strcmp(names[2], "9") &&
           !strcmp(names[3], "10"));
  free(labels), nle_class_names_free(&names, C);
  /* strings, sorted by their bytes */
  t = test_write_file("labels_str.txt", "b\nB\na\nb\n", strlen("b\nB\na\nb\n"));
  nle_test_ok(nle_labels_read(ctx, t, NULL, 4, &labels, &n, &C, &names));
  nle_test(C == 3 && labels[0] == 2 && labels[1] == 0 && labels[2] == 1 && !strcmp(names[0], "B") && !strcmp(names[2], "b"));
  free(labels), nle_class_names_free(&names, C);
  /* .npy float64 holding whole numbers, and int64, 1-based as MATLAB's */
  uint8_t buf[512];
  const double fl[4] = {2.0, 1.0, -3.0, 2.0};
  size_t len = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", fl, sizeof fl);
  t = test_write_file("labels_f8.npy", buf, len);
  nle_test_ok(nle_labels_read(ctx, t, NULL, 4, &labels, &n, &C, &names));
  nle_test(C == 3 && labels[0] == 2 && labels[1] == 1 && labels[2] == 0 && labels[3] == 2 && !strcmp(names[0], "-3"));
  free(labels), nle_class_names_free(&names, C);
  const int64_t il[3] = {20, 1, 20};
  len = make_npy(buf, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", il, sizeof il);
  t = test_write_file("labels_i8.npy", buf, len);
  nle_test_ok(nle_labels_read(ctx, t, NULL, 3, &labels, &n, &C, &names));
  nle_test(C == 2 && labels[0] == 1 && labels[1] == 0 && labels[2] == 1 && !strcmp(names[1], "20"));
  free(labels), nle_class_names_free(&names, C);
  /* refused: NaN, a fraction (file and 0-based row named), a wrong count */
  const double bad[3] = {1.0, NAN, 2.0};
  len = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", bad, sizeof bad);
  t = test_write_file("labels_nan.npy", buf, len);
  nle_test(nle_labels_read(ctx, t, NULL, 3, &labels, &n, &C, &names) == NLE_ERR_VALUE && !labels);
  nle_test(strstr(nle_ctx_error(ctx), "labels_nan.npy") && strstr(nle_ctx_error(ctx), "row 1") &&
           strstr(nle_ctx_error(ctx), "NaN"));
  /* the encoder's own words, for callers that hand it numbers */
  int32_t nc = 0;
  const double vals[2] = {4.0, NAN};
  nle_test(nle__labels_encode_real(ctx, "y", vals, 2, 1e9, codes, &nc, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "y: the label of row 1 is NaN (a missing label)"));
  t = test_write_file("labels_frac.txt", "1\n2.5\n", strlen("1\n2.5\n"));
  nle_test(nle_labels_read(ctx, t, NULL, 2, &labels, &n, &C, &names) == NLE_ERR_VALUE && !labels);
  nle_test(strstr(nle_ctx_error(ctx), "labels_frac.txt: the label of row 1 is 2.5, not a whole number") != NULL);
  t = test_write_file("labels_short.txt", "1\n2\n", strlen("1\n2\n"));
  nle_test(nle_labels_read(ctx, t, NULL, 3, &labels, &n, &C, &names) == NLE_ERR_FORMAT && !labels);
  nle_test(strstr(nle_ctx_error(ctx), "labels_short.txt: 2 labels for 3 points") != NULL);
  /* a data file's label column: 1-based classes */
  nle_read_opts o;
  nle_read_opts_init(&o);
  o.label_column = NLE_LABEL_LAST;
  nle_dataset *ds = NULL;
  nle_test_ok(read_text(ctx, "1,2,1\n3,4,2\n5,6,1\n", &o, &ds));
  nle_test(ds && ds->n_classes == 2 && ds->labels[0] == 0 && ds->labels[1] == 1 && !strcmp(ds->class_names[1], "2"));
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

static void npy_roundtrip(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *m;
  nle_test_ok(nle_matd_alloc(ctx, 5, 3, &m));
  for (int i = 0; i < 15; i++) m->data[i] = i * 0.25 - 1.0;
  const char *p = test_path("round.npy");
  nle_test_ok(nle_write_matd(ctx, p, m));
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, p, NULL, &ds));
  int same = ds->X->rows == 5 && ds->X->cols == 3;
  for (int i = 0; same && i < 15; i++) same = ds->X->data[i] == (float)m->data[i];
  nle_test(same);
  nle_dataset_free(&ds);
  const char *c = test_path("round.csv");
  nle_test_ok(nle_write_matd(ctx, c, m));
  nle_test_ok(nle_dataset_read(ctx, c, NULL, &ds));
  nle_test(ds->X->rows == 5 && ds->X->data[14] == (float)m->data[14]);
  nle_dataset_free(&ds);
  int32_t lab[5] = {4, 3, 2, 1, 0};
  nle_test_ok(nle_write_labels(ctx, test_path("lab.npy"), lab, 5));
  int32_t *back;
  int64_t n;
  int32_t classes;
  nle_test_ok(nle_labels_read(ctx, test_path("lab.npy"), NULL, 5, &back, &n, &classes, NULL));
  nle_test(back[0] == 4 && back[4] == 0 && classes == 5);
  free(back);
  nle_matd_free(&m);
  nle_ctx_free(&ctx);
}

static size_t make_idx(uint8_t *buf, uint8_t type, int ndim, const uint32_t *dims, const void *data, size_t len) {
  buf[0] = buf[1] = 0;
  buf[2] = type;
  buf[3] = (uint8_t)ndim;
  for (int i = 0; i < ndim; i++)
    for (int b = 0; b < 4; b++) buf[4 + 4 * i + b] = (uint8_t)(dims[i] >> (24 - 8 * b));
  memcpy(buf + 4 + 4 * ndim, data, len);
  return 4 + 4 * (size_t)ndim + len;
}

static size_t gzip_bytes(const uint8_t *in, size_t len, uint8_t *out, size_t cap) {
  z_stream z;
  memset(&z, 0, sizeof z);
  deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)len;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  deflate(&z, Z_FINISH);
  size_t n = cap - z.avail_out;
  deflateEnd(&z);
  return n;
}

/* A compressed file is judged from its first MiB: a header that declares
 * nothing readable, or text with an error in its first lines, is refused
 * before the rest is inflated (with a 16 MiB cap, a 48 MiB stream would
 * otherwise stop at the cap), and a header's declared size bounds what is
 * kept. Text with a NUL byte after the first MiB stops there. */
static void gzip_judged_from_start(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_ctx_set_max_memory(ctx, (size_t)16 << 20);
  size_t big = (size_t)48 << 20, cap = (size_t)2 << 20;
  uint8_t *raw = calloc(big, 1), *gz = malloc(cap);
  nle_dataset *ds = NULL;
  /* zeros: an IDX magic with type code 0 */
  size_t glen = gzip_bytes(raw, big, gz, cap);
  const char *p = test_write_file("zeros.gz", gz, glen);
  nle_test(nle_dataset_read(ctx, p, NULL, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "unknown IDX type code 0x00") != NULL);
  /* a 10 x 2 float32 .npy followed by 48 MiB: the array, the rest dropped */
  const char hdr[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 2), }";
  size_t hlen = 128 - 10;
  memcpy(raw, "\x93NUMPY\x01\x00", 8);
  raw[8] = (uint8_t)hlen;
  raw[9] = 0;
  memset(raw + 10, ' ', hlen);
  memcpy(raw + 10, hdr, sizeof hdr - 1);
  raw[127] = '\n';
  for (int i = 0; i < 20; i++) {
    float v = (float)i;
    memcpy(raw + 128 + 4 * i, &v, 4);
  }
  glen = gzip_bytes(raw, big, gz, cap);
  p = test_write_file("short.npy.gz", gz, glen);
  nle_test_ok(nle_dataset_read(ctx, p, NULL, &ds));
  nle_test(ds && ds->X->rows == 10 && ds->X->cols == 2 && ds->X->data[19] == 19.0f);
  nle_dataset_free(&ds);
  /* text: an error on line 3, then 48 MiB of good rows */
  for (size_t i = 0; i + 4 <= big; i += 4) memcpy(raw + i, "1,2\n", 4);
  memcpy(raw + 8, "x,5\n", 4);
  glen = gzip_bytes(raw, big, gz, cap);
  p = test_write_file("typo.csv.gz", gz, glen);
  nle_test(nle_dataset_read(ctx, p, NULL, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "line 3, field 1: not a number") != NULL);
  /* text with a NUL byte at 2 MiB + 1 */
  memcpy(raw + 8, "3,4\n", 4);
  raw[((size_t)2 << 20) + 1] = '\0';
  glen = gzip_bytes(raw, big, gz, cap);
  p = test_write_file("nul.csv.gz", gz, glen);
  nle_test(nle_dataset_read(ctx, p, NULL, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "byte 2097153: NUL byte") != NULL);
  /* good text longer than the judged start is read whole */
  glen = gzip_bytes(raw, (size_t)2 << 20, gz, cap);
  p = test_write_file("long.csv.gz", gz, glen);
  nle_test_ok(nle_dataset_read(ctx, p, NULL, &ds));
  nle_test(ds && ds->X->rows == ((size_t)2 << 20) / 4 && ds->X->data[2 * 300000 + 1] == 2.0f);
  nle_dataset_free(&ds);
  free(raw);
  free(gz);
  nle_ctx_free(&ctx);
}

static void idx_and_gzip(void) {
  nle_ctx *ctx = test_ctx(1);
  uint8_t buf[256], gz[512];
  uint32_t dims[3] = {3, 2, 2};
  uint8_t pix[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
  size_t len = make_idx(buf, 0x08, 3, dims, pix, sizeof pix);
  nle_dataset *ds;
  nle_test_ok(nle_parse_idx(ctx, "img", buf, len, &ds));
  nle_test(ds->X->rows == 3 && ds->X->cols == 4 && ds->X->data[11] == 255);
  nle_dataset_free(&ds);
  /* The same through a gzip'ed file and the generic reader. */
  size_t glen = gzip_bytes(buf, len, gz, sizeof gz);
  const char *p = test_write_file("img.gz", gz, glen);
  nle_test_ok(nle_dataset_read(ctx, p, NULL, &ds));
  nle_test(ds->X->rows == 3 && ds->X->data[5] == 5);
  nle_dataset_free(&ds);
  p = test_write_file("cut.gz", gz, glen - 9);
  nle_test(nle_dataset_read(ctx, p, NULL, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "truncated compressed data") != NULL);
  gz[12] ^= 0x5a;
  gz[13] ^= 0xa5;
  p = test_write_file("bad.gz", gz, glen);
  nle_test(nle_dataset_read(ctx, p, NULL, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "bad.gz") != NULL);
  nle_test(nle_parse_idx(ctx, "cut", buf, len - 1, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "truncated IDX data") != NULL);
  nle_test(nle_parse_idx(ctx, "hdr", buf, 10, &ds) == NLE_ERR_FORMAT);
  buf[2] = 0x07;
  nle_test(nle_parse_idx(ctx, "type", buf, len, &ds) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "type code 0x07") != NULL);
  /* Big-endian float32 IDX. */
  uint32_t d2[2] = {1, 2};
  uint8_t fl[8] = {0x3f, 0xc0, 0, 0, 0xc0, 0x20, 0, 0}; /* 1.5, -2.5 */
  len = make_idx(buf, 0x0D, 2, d2, fl, 8);
  nle_test_ok(nle_parse_idx(ctx, "f32", buf, len, &ds));
  nle_test(ds->X->data[0] == 1.5f && ds->X->data[1] == -2.5f);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

static void atomic_output(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *m;
  nle_test_ok(nle_matd_alloc(ctx, 2, 2, &m));
  nle_test(nle_write_matd(ctx, test_path("no/such/dir/x.npy"), m) == NLE_ERR_IO);
  nle_test(strstr(nle_ctx_error(ctx), "does not exist") != NULL);
  nle_test(access(test_path("no"), F_OK) != 0);
  /* A failed write leaves an existing file as it was. */
  const char *p = test_write_file("keep.xyz", "precious", 8);
  nle_test(nle_write_matd(ctx, p, m) == NLE_ERR_UNSUPPORTED);
  struct stat st;
  nle_test(stat(p, &st) == 0 && st.st_size == 8);
  nle_test_ok(nle_write_text(ctx, test_path("t.json"), "{}\n"));
  nle_test(stat(test_path("t.json"), &st) == 0 && st.st_size == 3 && (st.st_mode & 0044));
  nle_matd_free(&m);
  nle_ctx_free(&ctx);
}

/* A record longer than one checksum piece (8 MB; checked in pieces on the
 * threads and combined): read back whole on 1 and 2 threads, mapped or read,
 * and refused with the record named when one byte in its third piece is
 * flipped, or one in its last. */
static void records_long_checksum(void) {
  nle_ctx *one = test_ctx(1), *two = test_ctx(2);
  nle_ctx_set_threads(one, 1);
  nle_ctx_set_threads(two, 2);
  size_t count = (5u << 20) + 1234; /* doubles: 40 MB and a bit, six pieces */
  double *data = malloc(count * sizeof(double));
  for (size_t i = 0; i < count; i++) data[i] = (double)(i % 1013) * 0.5;
  const char *path = test_path("long.rec");
  nle__afile af;
  nle_test_ok(nle__rec_open(two, path, "test records", &af));
  nle__rec_put(&af, "values", 'd', data, count);
  nle_test_ok(nle__afile_commit(two, &af));
  nle__rec_file f;
  nle_test_ok(nle__rec_read(one, path, "test records", &f));
  nle_test(f.count == 1 && f.entries[0].count == count && !memcmp(f.entries[0].data, data, count * sizeof(double)));
  nle__rec_free(&f);
  nle_test_ok(nle__rec_map(two, path, "test records", &f));
  nle_test(f.count == 1 && !memcmp(f.entries[0].data, data, count * sizeof(double)));
  nle__rec_free(&f);
  long offsets[] = {17l << 20, -3}; /* in the third piece; in the last, from the end */
  for (int c = 0; c < 2; c++) {
    FILE *fp = fopen(path, "r+b");
    nle_test(fp != NULL);
    if (!fp) break;
    fseek(fp, offsets[c], offsets[c] < 0 ? SEEK_END : SEEK_SET);
    long at = ftell(fp);
    int byte = fgetc(fp);
    fseek(fp, at, SEEK_SET);
    fputc(byte ^ 0x10, fp);
    fclose(fp);
    for (int t = 0; t < 2; t++) {
      nle_ctx *ctx = t ? two : one;
      nle_test(nle__rec_read(ctx, path, "test records", &f) == NLE_ERR_FORMAT &&
               strstr(nle_ctx_error(ctx), "'values'") && strstr(nle_ctx_error(ctx), "checksum"));
    }
    fp = fopen(path, "r+b");
    if (!fp) break;
    fseek(fp, at, SEEK_SET);
    fputc(byte, fp); /* put back */
    fclose(fp);
  }
  nle_test_ok(nle__rec_read(two, path, "test records", &f));
  nle__rec_free(&f);
  free(data);
  nle_ctx_free(&one);
  nle_ctx_free(&two);
}

/* The model container (model_file.h) with a kind of its own: the kind
 * round-trips through its hooks, a refused model writes no file, a file of
 * another kind and a payload the kind rejects are errors naming the file,
 * and a part-built model is freed. */
typedef struct {
  double v[3];
  int *freed;
} toy_model;

static nle_status toy_check(nle_ctx *ctx, const void *model, bool copy_data) {
  (void)copy_data;
  const toy_model *m = model;
  return m->v[0] < 0 ? nle__fail(ctx, NLE_ERR_ARG, "toy model: negative") : NLE_OK;
}

static void toy_write(nle__afile *af, const void *model, bool copy_data) {
  (void)copy_data;
  nle__rec_put(af, "v", 'd', ((const toy_model *)model)->v, 3);
}

static int toy_frees;

static nle_status toy_read(nle_ctx *ctx, nle__rec_file *f, void **out) {
  toy_model *m = calloc(1, sizeof *m);
  *out = m;
  m->freed = &toy_frees;
  const void *v;
  nle_status s = nle__rec_get(ctx, f, "v", 'd', 3, &v);
  if (!s) memcpy(m->v, v, sizeof m->v);
  return !s && m->v[1] > 100 ? nle__fail(ctx, NLE_ERR_FORMAT, "damaged toy model") : s;
}

static void toy_free(void *model) {
  toy_model *m = model;
  (*m->freed)++;
  free(m);
}

static void model_container(void) {
  nle_ctx *ctx = test_ctx(1);
  const nle__model_kind toy = {"toy-model", false, toy_check, toy_write, toy_read, toy_free, NULL, NULL};
  const nle__model_kind other = {"other-model", true, NULL, toy_write, toy_read, toy_free, NULL, NULL};
  char path[4096];
  snprintf(path, sizeof path, "%s", test_path("toy.nle"));
  toy_model m = {{1, 2, 3}, NULL};
  void *back = NULL;
  nle_test_ok(nle__model_save(ctx, &toy, &m, path, true));
  char kind[32];
  nle_test(nle_file_kind(ctx, path, kind, sizeof kind) == NLE_OK && !strcmp(kind, "toy-model"));
  if (nle_test_ok(nle__model_load(ctx, &toy, path, &back)))
    nle_test(!memcmp(((toy_model *)back)->v, m.v, sizeof m.v));
  free(back);
  nle_test(nle__model_load(ctx, &other, path, &back) == NLE_ERR_FORMAT && back == NULL &&
           !strncmp(nle_ctx_error(ctx), path, strlen(path)) && strstr(nle_ctx_error(ctx), "not a other-model"));
  nle_test(nle__model_attach(ctx, &toy, &m, NULL) == NLE_ERR_ARG);
  m.v[1] = 1000; /* written, then refused by the kind's reader: freed, the file named */
  nle_test_ok(nle__model_save(ctx, &toy, &m, path, true));
  toy_frees = 0;
  nle_test(nle__model_load(ctx, &toy, path, &back) == NLE_ERR_FORMAT && back == NULL && toy_frees == 1);
  char expected[4200];
  snprintf(expected, sizeof expected, "%s: damaged toy model", path);
  nle_test(!strcmp(nle_ctx_error(ctx), expected));
  m.v[0] = -1; /* refused before any file is opened */
  snprintf(path, sizeof path, "%s", test_path("refused.nle"));
  nle_test(nle__model_save(ctx, &toy, &m, path, true) == NLE_ERR_ARG && access(path, F_OK) != 0);
  nle_ctx_free(&ctx);
}

static const nle__model_kind toy_kind = {"toy-model", false, toy_check, toy_write, toy_read, toy_free, NULL, NULL};
NLE__MODEL_LOAD_FN(toy_load, toy_model, toy_kind, "toy model load")

/* A kind's typed load (the one macro every kind's public load is): the
 * model back typed, a NULL path or out refused in the kind's words. */
static void model_typed_load(void) {
  nle_ctx *ctx = test_ctx(1);
  char path[4096];
  snprintf(path, sizeof path, "%s", test_path("typed.nle"));
  toy_model m = {{4, 5, 6}, NULL}, *back = NULL;
  nle_test_ok(nle__model_save(ctx, &toy_kind, &m, path, true));
  if (nle_test_ok(toy_load(ctx, path, &back))) nle_test(!memcmp(back->v, m.v, sizeof m.v));
  free(back);
  nle_test(toy_load(ctx, NULL, &back) == NLE_ERR_ARG && !strcmp(nle_ctx_error(ctx), "toy model load: NULL argument"));
  nle_test(toy_load(ctx, path, NULL) == NLE_ERR_ARG);
  nle_trained *t = NULL;
  nle_test(nle_trained_load(ctx, NULL, &t) == NLE_ERR_ARG && !t);
  nle_ctx_free(&ctx);
}

static void synthetic_datasets(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_dataset *a, *b;
  nle_test_ok(nle_dataset_read(ctx, "swissroll:500", NULL, &a));
  nle_test_ok(nle_dataset_read(ctx, "swissroll:500", NULL, &b));
  nle_test(a->X->rows == 500 && a->X->cols == 3 && a->labels && a->n_classes == 6);
  nle_test(!memcmp(a->X->data, b->X->data, 500 * 3 * sizeof(float)));
  nle_dataset_free(&a);
  nle_dataset_free(&b);
  nle_test_ok(nle_dataset_read(ctx, "blobs:300:5:3", NULL, &a));
  nle_test(a->X->cols == 5 && a->n_classes == 3);
  nle_dataset_free(&a);
  nle_test(nle_dataset_read(ctx, "spiral:0", NULL, &a) == NLE_ERR_ARG);
  nle_test(nle_dataset_read(ctx, "spiral:12x", NULL, &a) == NLE_ERR_ARG);
  nle_ctx_free(&ctx);
}

/* The real dataset, when Debian's package is installed (set-up installs it). */
static void fashion_mnist(void) {
  /* ./setup.sh test installs dataset-fashion-mnist: without it this test
   * fails rather than pass having checked nothing */
  nle_test(access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) == 0);
  if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) != 0) return;
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "fashion-mnist-test", NULL, &ds));
  nle_test(ds->X->rows == 10000 && ds->X->cols == 784 && ds->n_classes == 10);
  int counts[10] = {0}, in_range = 1;
  for (size_t i = 0; i < 10000; i++) counts[ds->labels[i]]++;
  for (size_t i = 0; i < 10000 * 784; i++) in_range &= ds->X->data[i] >= 0 && ds->X->data[i] <= 255;
  for (int c = 0; c < 10; c++) nle_test(counts[c] == 1000); /* the test split is balanced */
  nle_test(in_range);
  nle_test(!strcmp(ds->class_names[9], "Ankle boot"));
  nle_dataset_free(&ds);
  nle_test_ok(nle_dataset_read(ctx, "fashion-mnist:123", NULL, &ds));
  nle_test(ds->X->rows == 123 && ds->X->cols == 784 && ds->labels[0] == 9); /* the first training image is a boot */
  nle_dataset_free(&ds);
  nle_test(nle_dataset_read(ctx, "fashion-mnist:0", NULL, &ds) == NLE_ERR_ARG);
  nle_ctx_free(&ctx);
}


/* A Fashion-MNIST IDX file in dir, gzip'ed by zlib's own writer: a header
 * announcing `total` records of `per` bytes (3 dimensions when per > 1)
 * followed by only `held` of them, record i's byte b = (7 i + b) mod 251
 * (labels: i mod 10). */
static void write_fake_idx(const char *dir, const char *file, uint32_t total, uint32_t per, uint32_t held) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  gzFile gz = gzopen(path, "wb1");
  uint8_t head[16] = {0, 0, 0x08, per > 1 ? 3 : 1};
  for (int k = 0; k < 4; k++) head[4 + k] = (uint8_t)(total >> (24 - 8 * k));
  if (per > 1) head[11] = head[15] = 28;
  gzwrite(gz, head, per > 1 ? 16 : 8);
  uint8_t rec[784];
  for (uint32_t i = 0; i < held; i++) {
    for (uint32_t b = 0; b < per; b++) rec[b] = per > 1 ? (uint8_t)((7 * i + b) % 251) : (uint8_t)(i % 10);
    gzwrite(gz, rec, per);
  }
  gzclose(gz);
}

/* A gzip file of raw[0, len) whose deflate data (stored, level 0) end at a
 * multiple of 8 KiB, the size of zlib's gzread input buffer: the trailer's
 * CRC-32 then starts a buffer of its own, so zlib has not checked it when the
 * last record is out, and a reader that stops there never would. crc_xor
 * damages the stored CRC-32. */
static void write_gzip_trailer_apart(const char *path, const uint8_t *raw, size_t len, uint32_t crc_xor) {
  z_stream z;
  memset(&z, 0, sizeof z);
  deflateInit2(&z, 0, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  uLong cap = deflateBound(&z, (uLong)len);
  uint8_t *def = malloc(cap);
  z.next_in = (Bytef *)raw, z.avail_in = (uInt)len, z.next_out = def, z.avail_out = (uInt)cap;
  deflate(&z, Z_FINISH);
  size_t dlen = cap - z.avail_out, pad = (8192 - (11 + dlen) % 8192) % 8192;
  deflateEnd(&z);
  /* header with a file name (flag 0x08) of `pad` bytes to place the end */
  uint8_t head[10] = {0x1f, 0x8b, 8, 0x08, 0, 0, 0, 0, 0, 0xff}, tail[8];
  uint32_t crc = (uint32_t)crc32(0, raw, (uInt)len) ^ crc_xor, size = (uint32_t)len;
  for (int k = 0; k < 4; k++) tail[k] = (uint8_t)(crc >> (8 * k)), tail[4 + k] = (uint8_t)(size >> (8 * k));
  FILE *f = fopen(path, "wb");
  fwrite(head, 1, sizeof head, f);
  for (size_t i = 0; i < pad; i++) fputc('p', f);
  fputc(0, f);
  fwrite(def, 1, dlen, f);
  fwrite(tail, 1, sizeof tail, f);
  fclose(f);
  free(def);
}

/* fashion-mnist:N reads the first N records only (issue 34 item 15): a
 * training file that announces 60,000 images but holds 300 serves
 * fashion-mnist:300, and a memory cap that 300 rows fit holds it; the cap's
 * message names the N asked for. The split order and the values against
 * the files' bytes as written above. */
static void fashion_head(void) {
  const char *dir = test_path("fashion");
  char dir_copy[512];
  snprintf(dir_copy, sizeof dir_copy, "%s", dir);
  mkdir(dir_copy, 0700);
  write_fake_idx(dir_copy, "train-images-idx3-ubyte.gz", 60000, 784, 300);
  write_fake_idx(dir_copy, "train-labels-idx1-ubyte.gz", 60000, 1, 300);
  write_fake_idx(dir_copy, "t10k-images-idx3-ubyte.gz", 10000, 784, 10000);
  write_fake_idx(dir_copy, "t10k-labels-idx1-ubyte.gz", 10000, 1, 10000);
  char *old = getenv("NLE_FASHION_MNIST_DIR") ? strdup(getenv("NLE_FASHION_MNIST_DIR")) : NULL;
  setenv("NLE_FASHION_MNIST_DIR", dir_copy, 1);
  nle_ctx *ctx = test_ctx(1);
  nle_ctx_set_max_memory(ctx, 2u << 20); /* 300 rows: 0.9 MiB; 60,000: 179 MiB */
  nle_dataset *ds = NULL;
  nle_test_ok(nle_dataset_read(ctx, "fashion-mnist:300", NULL, &ds));
  if (ds) {
    int same = ds->X->rows == 300 && ds->X->cols == 784;
    for (size_t i = 0; same && i < 300; i++) {
      same &= ds->labels[i] == (int32_t)(i % 10);
      for (size_t b = 0; b < 784; b++) same &= ds->X->data[i * 784 + b] == (float)((7 * i + b) % 251);
    }
    nle_test(same);
  }
  nle_dataset_free(&ds);
  /* one record more than the file holds: refused naming the file and the byte */
  nle_test(nle_dataset_read(ctx, "fashion-mnist:301", NULL, &ds) == NLE_ERR_FORMAT);
  if (!nle_test(strstr(nle_ctx_error(ctx), "train-images-idx3-ubyte.gz: byte 235216: truncated IDX data")))
    printf("  message \"%s\"\n", nle_ctx_error(ctx));
  /* the cap's message names the size asked for */
  nle_test(nle_dataset_read(ctx, "fashion-mnist:20000", NULL, &ds) == NLE_ERR_MEMCAP);
  if (!nle_test(strstr(nle_ctx_error(ctx), "a 20000 x 784 float matrix")))
    printf("  message \"%s\"\n", nle_ctx_error(ctx));
  /* the test split alone, then after the training split */
  nle_ctx_set_max_memory(ctx, (size_t)1 << 30);
  nle_test_ok(nle_dataset_read(ctx, "fashion-mnist-test", NULL, &ds));
  if (ds) nle_test(ds->X->rows == 10000 && ds->labels[9999] == 9 && ds->X->data[9999 * 784 + 5] == (float)((7 * 9999 + 5) % 251));
  nle_dataset_free(&ds);
  nle_test(nle_dataset_read(ctx, "fashion-mnist:60001", NULL, &ds) == NLE_ERR_FORMAT);
  write_fake_idx(dir_copy, "train-images-idx3-ubyte.gz", 60000, 784, 60000);
  write_fake_idx(dir_copy, "train-labels-idx1-ubyte.gz", 60000, 1, 60000);
  nle_test_ok(nle_dataset_read(ctx, "fashion-mnist:60002", NULL, &ds));
  if (ds)
    nle_test(ds->X->rows == 60002 && ds->X->data[59999 * 784 + 3] == (float)((7 * 59999 + 3) % 251) &&
             ds->X->data[60001 * 784 + 3] == (float)((7 * 1 + 3) % 251) && ds->labels[60001] == 1);
  nle_dataset_free(&ds);
  /* a whole split read to its end: the gzip trailer's CRC-32 is checked,
   * also where zlib had not reached it with the last record */
  char path[1024];
  snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", dir_copy);
  size_t len = 16 + (size_t)10000 * 784;
  uint8_t *raw = malloc(len);
  memcpy(raw, (const uint8_t[16]){0, 0, 8, 3, 0, 0, 0x27, 0x10, 0, 0, 0, 28, 0, 0, 0, 28}, 16);
  for (size_t i = 0; i < 10000; i++)
    for (size_t b = 0; b < 784; b++) raw[16 + i * 784 + b] = (uint8_t)((7 * i + b) % 251);
  for (uint32_t damage = 0; damage <= 1; damage++) {
    write_gzip_trailer_apart(path, raw, len, damage << 20);
    nle_status s = nle_dataset_read(ctx, "fashion-mnist-test", NULL, &ds);
    nle_test(damage ? s == NLE_ERR_FORMAT : s == NLE_OK && ds->X->data[9999 * 784 + 5] == (float)((7 * 9999 + 5) % 251));
    if (damage && !nle_test(strstr(nle_ctx_error(ctx), "t10k-images-idx3-ubyte.gz: corrupt compressed data (incorrect data check)")))
      printf("  message \"%s\"\n", nle_ctx_error(ctx));
    nle_dataset_free(&ds);
  }
  free(raw);
  nle_ctx_free(&ctx);
  if (old) setenv("NLE_FASHION_MNIST_DIR", old, 1);
  else unsetenv("NLE_FASHION_MNIST_DIR");
  free(old);
}

/* Matrix Market: what nle_write_csr_mtx writes reads back exactly; symmetric
 * and pattern files expand; malformed files are refused with their line. */
static void mtx_round_trip(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_csr *m, *back;
  nle_test_ok(nle_csr_alloc(ctx, 3, 4, 4, NLE_F64, &m));
  int64_t rp[4] = {0, 2, 2, 4};
  int32_t ci[4] = {1, 3, 0, 2};
  double v[4] = {0.1, 1.0 / 3.0, -2e-300, 7};
  memcpy(m->rowptr, rp, sizeof rp);
  memcpy(m->colind, ci, sizeof ci);
  memcpy(m->val, v, sizeof v);
  const char *path = test_path("m.mtx");
  nle_test_ok(nle_write_csr_mtx(ctx, path, m));
  nle_test_ok(nle_read_csr_mtx(ctx, path, &back));
  nle_test(back->rows == 3 && back->cols == 4 && back->nnz == 4 && !memcmp(back->rowptr, rp, sizeof rp) &&
           !memcmp(back->colind, ci, sizeof ci) && !memcmp(back->val, v, sizeof v));
  nle_csr_free(&back);
  const char sym[] = "%%MatrixMarket matrix coordinate pattern symmetric\n% comment\n3 3 2\n2 1\n3 3\n";
  nle_test_ok(nle_read_csr_mtx(ctx, test_write_file("s.mtx", sym, sizeof sym - 1), &back));
  nle_test(back->nnz == 3 && back->rowptr[1] == 1 && back->colind[0] == 1 && nle_csr_value(back, 0) == 1.0 &&
           back->colind[1] == 0 && back->colind[2] == 2);
  nle_csr_free(&back);
  const char trunc[] = "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n";
  nle_test(nle_read_csr_mtx(ctx, test_write_file("t.mtx", trunc, sizeof trunc - 1), &back) == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "3 entries announced, 1 found") != NULL);
  const char nan[] = "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 nan\n";
  nle_test(nle_read_csr_mtx(ctx, test_write_file("n.mtx", nan, sizeof nan - 1), &back) == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "line 3: value is not finite") != NULL);
  nle_csr_free(&m);
  nle_ctx_free(&ctx);
}

/* A .npy file's header and little-endian rows for a test (version 1). */
static size_t npy_bytes(uint8_t *out, const char *descr, size_t rows, size_t cols, const void *data, size_t elem) {
  char dict[128];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr, rows, cols);
  size_t hlen = (size_t)n + 1;
  hlen += (64 - (10 + hlen) % 64) % 64;
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  out[8] = (uint8_t)(hlen & 255);
  out[9] = (uint8_t)(hlen >> 8);
  memset(out + 10, ' ', hlen);
  memcpy(out + 10, dict, (size_t)n);
  out[10 + hlen - 1] = '\n';
  memcpy(out + 10 + hlen, data, rows * cols * elem);
  return 10 + hlen + rows * cols * elem;
}

/* .npy files read in chunks from disk equal the whole-buffer parse: float32
 * across several 16 MB chunks, float64; a truncated file and a NaN give the
 * buffer parse's messages (file, byte, row, column). */
static void npy_streamed_equals_buffer(void) {
  nle_ctx *ctx = test_ctx(1);
  size_t rows = 5000, cols = 900; /* 18 MB of float32: two chunks */
  float *f = malloc(rows * cols * sizeof *f);
  double *g = malloc(300 * 7 * sizeof *g);
  uint8_t *buf = malloc(rows * cols * sizeof *f + 256);
  for (size_t i = 0; i < rows * cols; i++) f[i] = (float)((double)(i % 9973) * 0.25 - 7.0);
  for (size_t i = 0; i < 300 * 7; i++) g[i] = (double)i * 1e-3 - 0.5;
  struct {
    const char *name, *descr;
    size_t rows, cols, elem;
    const void *data;
  } cases[2] = {{"big.npy", "<f4", rows, cols, 4, f}, {"f64.npy", "<f8", 300, 7, 8, g}};
  for (int c = 0; c < 2; c++) {
    size_t len = npy_bytes(buf, cases[c].descr, cases[c].rows, cases[c].cols, cases[c].data, cases[c].elem);
    const char *path = test_write_file(cases[c].name, buf, len);
    nle_dataset *a = NULL, *b = NULL;
    nle_test_ok(nle_dataset_read(ctx, path, NULL, &a));
    nle_test_ok(nle_parse_npy(ctx, path, buf, len, &b));
    nle_test(a && b && a->X->rows == cases[c].rows && a->X->cols == cases[c].cols &&
             !memcmp(a->X->data, b->X->data, cases[c].rows * cases[c].cols * sizeof(float)));
    nle_dataset_free(&a);
    nle_dataset_free(&b);
  }
  /* truncated: the header promises 300 rows, the file holds 299 and a half */
  size_t len = npy_bytes(buf, "<f8", 300, 7, g, 8);
  const char *cut = test_write_file("cut.npy", buf, len - 28);
  nle_dataset *d = NULL;
  nle_test(nle_dataset_read(ctx, cut, NULL, &d) == NLE_ERR_FORMAT && !d);
  nle_test(strstr(nle_ctx_error(ctx), "truncated .npy data") != NULL);
  /* a NaN at row 2, column 3 */
  g[2 * 7 + 3] = NAN;
  len = npy_bytes(buf, "<f8", 300, 7, g, 8);
  const char *nan = test_write_file("nan.npy", buf, len);
  nle_test(nle_dataset_read(ctx, nan, NULL, &d) == NLE_ERR_VALUE && !d);
  char want[64];
  snprintf(want, sizeof want, "nan.npy: byte %zu (row 2, column 3): NaN", len - 300 * 7 * 8 + 17 * 8);
  if (!nle_test(strstr(nle_ctx_error(ctx), want) != NULL)) printf("  %s\n", nle_ctx_error(ctx));
  free(f);
  free(g);
  free(buf);
  nle_ctx_free(&ctx);
}

/* A one-column text file of class names with spaces: one label a line. */
static void label_names_with_spaces(void) {
  nle_ctx *ctx = test_ctx(1);
  const char text[] = "Ankle boot\nT-shirt/top\nAnkle boot\nBag\n";
  const char *path = test_write_file("names.txt", text, sizeof text - 1);
  int32_t *labels = NULL, classes = 0;
  int64_t n = 0;
  char **names = NULL;
  nle_test_ok(nle_labels_read(ctx, path, NULL, 4, &labels, &n, &classes, &names));
  nle_test(n == 4 && classes == 3 && labels && names);
  if (labels && names && classes == 3) {
    nle_test(labels[0] == labels[2] && labels[0] != labels[1] && labels[1] != labels[3]);
    nle_test(!strcmp(names[labels[0]], "Ankle boot") && !strcmp(names[labels[1]], "T-shirt/top") &&
             !strcmp(names[labels[3]], "Bag"));
  }
  free(labels);
  nle_class_names_free(&names, classes);
  nle_ctx_free(&ctx);
}

/* Output transactions: inside one, completed files wait under temporary
 * names; abort (or freeing the context) removes them and leaves what was
 * there before, commit puts all in place. Temporaries of a dead process are
 * removed by the next write in their folder, a live one's are kept. And the
 * extension check before any work names the accepted ones. */
static int count_temporaries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".tmp.")) n++;
  if (d) closedir(d);
  return n;
}

static void output_transactions(void) {
  nle_ctx *ctx = test_ctx(1);
  mkdir(test_path("txn"), 0755);
  const char *dir = test_path("txn");
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s/a.npy", dir);
  snprintf(b, sizeof b, "%s/b.csv", dir);
  nle_matd *m;
  nle_test_ok(nle_matd_alloc(ctx, 2, 2, &m));
  for (int i = 0; i < 4; i++) m->data[i] = i;
  nle_test_ok(nle_write_text(ctx, a, "before"));
  struct stat st;
  nle_test_ok(nle_outputs_begin(ctx));
  nle_test(nle_outputs_begin(ctx) == NLE_ERR_ARG);
  nle_test_ok(nle_write_matd(ctx, a, m));
  nle_test_ok(nle_write_matd(ctx, b, m));
  nle_test(stat(a, &st) == 0 && st.st_size == 6 && access(b, F_OK) != 0 && count_temporaries(dir) == 2);
  nle_outputs_abort(ctx);
  nle_test(stat(a, &st) == 0 && st.st_size == 6 && access(b, F_OK) != 0 && count_temporaries(dir) == 0);
  nle_test_ok(nle_outputs_begin(ctx));
  nle_test_ok(nle_write_matd(ctx, a, m));
  nle_test_ok(nle_write_matd(ctx, a, m)); /* the second replaces the first */
  nle_test_ok(nle_write_matd(ctx, b, m));
  nle_test(count_temporaries(dir) == 2);
  nle_test_ok(nle_outputs_commit(ctx));
  nle_test(stat(a, &st) == 0 && st.st_size > 6 && access(b, F_OK) == 0 && count_temporaries(dir) == 0);
  /* a file of the caller's own format: staged like the library's own, in
   * place at the commit, gone on abort; outside a transaction, at close */
  char c[4096];
  snprintf(c, sizeof c, "%s/own.txt", dir);
  nle_output *out = NULL;
  nle_test_ok(nle_outputs_begin(ctx));
  nle_test_ok(nle_output_open(ctx, c, &out));
  fputs("mine\n", nle_output_stream(out));
  nle_test_ok(nle_output_close(ctx, &out));
  nle_test(out == NULL && access(c, F_OK) != 0 && count_temporaries(dir) == 1);
  nle_test_ok(nle_outputs_commit(ctx));
  nle_test(stat(c, &st) == 0 && st.st_size == 5 && count_temporaries(dir) == 0);
  nle_test_ok(nle_output_open(ctx, c, &out));
  fputs("longer text\n", nle_output_stream(out));
  nle_output_abort(&out);
  nle_test(out == NULL && stat(c, &st) == 0 && st.st_size == 5 && count_temporaries(dir) == 0);
  nle_test_ok(nle_output_open(ctx, c, &out));
  fputs("replaced\n", nle_output_stream(out));
  nle_test_ok(nle_output_close(ctx, &out));
  nle_test(stat(c, &st) == 0 && st.st_size == 9);
  snprintf(c, sizeof c, "%s/none/own.txt", dir);
  nle_test(nle_output_open(ctx, c, &out) == NLE_ERR_IO && out == NULL);
  /* freeing the context with a transaction open discards it */
  nle_test_ok(nle_outputs_begin(ctx));
  nle_test_ok(nle_write_text(ctx, b, "x"));
  nle_ctx_free(&ctx);
  nle_test(stat(b, &st) == 0 && st.st_size > 1 && count_temporaries(dir) == 0);
  /* a dead process's temporary goes, a live one's stays */
  ctx = test_ctx(1);
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, NULL, 0);
  char dead[4096], live[4096];
  snprintf(dead, sizeof dead, "%s/.c.npy.tmp.%ld.abcdef", dir, (long)child);
  snprintf(live, sizeof live, "%s/.c.npy.tmp.%ld.abcdef", dir, (long)getppid());
  test_write_file("txn/.c.npy.tmp.0.notours", "x", 1); /* not a temporary of ours: kept */
  FILE *f = fopen(dead, "w");
  if (f) fclose(f);
  f = fopen(live, "w");
  if (f) fclose(f);
  nle_test_ok(nle_write_matd(ctx, a, m));
  nle_test(access(dead, F_OK) != 0 && access(live, F_OK) == 0);
  unlink(live);
  /* extensions checked before any work */
  nle_test(nle_check_output(ctx, test_path("x.xyz"), NLE_OUTPUT_DENSE) == NLE_ERR_UNSUPPORTED &&
           strstr(nle_ctx_error(ctx), "use .npy, .csv, .tsv or .txt"));
  nle_test(nle_check_output(ctx, test_path("x.npy"), NLE_OUTPUT_MTX) == NLE_ERR_UNSUPPORTED &&
           strstr(nle_ctx_error(ctx), "use .mtx"));
  nle_test_ok(nle_check_output(ctx, test_path("x.svg"), NLE_OUTPUT_IMAGE));
  nle_test_ok(nle_check_output(ctx, test_path("x.model"), 0));
  nle_matd_free(&m);
  nle_ctx_free(&ctx);
}

/* The map page (nle_write_view_page): the data as the page's script reads
 * them, and each refusal in its words with no page left. */
static void view_page(void) {
  nle_ctx *ctx = test_ctx(1);
  double xy[] = {0, 1, 2, 3, -4.5, 5};
  nle_matd X = {3, 2, xy}, X3 = {2, 3, xy};
  int32_t codes[] = {1, 0, 1}, bad_codes[] = {1, 2, 0};
  char *names[] = {"a<b", "c"};
  nle_view_page page = {.X = &X, .labels = codes, .n_classes = 2, .class_names = names, .title = "T&"};
  const char *path = test_path("map.html");
  if (!nle_view_available()) {
    nle_test(nle_write_view_page(ctx, path, &page) == NLE_ERR_UNSUPPORTED && strstr(nle_ctx_error(ctx), "viewer"));
    nle_ctx_free(&ctx);
    return;
  }
  nle_test_ok(nle_write_view_page(ctx, path, &page));
  static char html[1 << 20];
  FILE *f = fopen(path, "rb");
  size_t len = f ? fread(html, 1, sizeof html - 1, f) : 0;
  if (f) fclose(f);
  html[len] = '\0';
  nle_test(!strncmp(html, "<!DOCTYPE html>", 15) && strstr(html, "<title>T&amp;</title>") &&
           strstr(html, "\"n\": 3, \"title\": \"T\\u0026\"") &&
           strstr(html, "\"classes\": 2, \"names\": [\"a\\u003cb\", \"c\"]") &&
           strstr(html, "<script id=\"nle-labels\" type=\"application/octet-stream\">AQAB</script>") &&
           strstr(html, "\"images\": null"));
  const char *bad = test_path("bad.html");
  nle_test(nle_write_view_page(ctx, test_path("map.png"), &page) == NLE_ERR_ARG &&
           strstr(nle_ctx_error(ctx), "map.png: the page is written as .html or .htm"));
  page.X = &X3;
  nle_test(nle_write_view_page(ctx, bad, &page) == NLE_ERR_VALUE &&
           !strcmp(nle_ctx_error(ctx), "X has 3 columns; the viewer shows a 2-D embedding (N x 2)"));
  page.X = &X;
  page.labels = bad_codes;
  page.labels_source = "l.txt";
  nle_test(nle_write_view_page(ctx, bad, &page) == NLE_ERR_VALUE &&
           !strcmp(nle_ctx_error(ctx), "labels l.txt: point 1 has the class code 2, not one of 0..1"));
  float pixels[3 * 5] = {0};
  nle_matf images = {3, 5, pixels};
  page.labels = codes;
  page.images = &images;
  nle_test(nle_write_view_page(ctx, bad, &page) == NLE_ERR_VALUE &&
           !strcmp(nle_ctx_error(ctx), "images: rows of 5 values are not square images (w*w grey or w*w*3 RGB)"));
  nle_test(access(bad, F_OK) != 0);
  nle_ctx_free(&ctx);
}

const nle_test_case io_tests[] = {{"io/label_names_with_spaces", label_names_with_spaces},
                                  {"io/npy_streamed_equals_buffer", npy_streamed_equals_buffer},{"io/mtx_round_trip", mtx_round_trip},
                                  
    {"io/text_formats", text_formats}, {"io/text_bom_header_labels", text_bom_header_labels},   {"io/text_labels", text_labels},
    {"io/text_malformed", text_malformed}, {"io/npy_read", npy_read}, {"io/label_encoding", label_encoding},
    {"io/npy_roundtrip", npy_roundtrip}, {"io/idx_and_gzip", idx_and_gzip},
    {"io/gzip_judged_from_start", gzip_judged_from_start},
    {"io/atomic_output", atomic_output}, {"io/output_transactions", output_transactions}, {"io/synthetic_datasets", synthetic_datasets},
    {"io/model_container", model_container},
    {"io/model_typed_load", model_typed_load}, {"io/view_page", view_page},
    {"io/records_long_checksum", records_long_checksum}, {"io/fashion_mnist", fashion_mnist}, {"io/fashion_head", fashion_head}, {NULL, NULL}};
