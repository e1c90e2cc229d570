/* binary.h — element conversion shared by the .npy and IDX readers. */
#ifndef NLE_IO_BINARY_H
#define NLE_IO_BINARY_H

#include <stdint.h>
#include <string.h>

typedef enum { ELEM_U8, ELEM_I8, ELEM_U16, ELEM_I16, ELEM_U32, ELEM_I32, ELEM_U64, ELEM_I64,
               ELEM_F32, ELEM_F64, ELEM_BOOL } elem_kind;

static inline uint64_t load_uint(const uint8_t *p, int size, int big_endian) {
  uint64_t v = 0;
  for (int i = 0; i < size; i++) {
    int b = big_endian ? i : size - 1 - i;
    v = (v << 8) | p[b];
  }
  return v;
}

/* Element i of an array of `kind` as a double. */
static inline double load_elem(const uint8_t *p, elem_kind kind, int size, int big_endian) {
  uint64_t u = load_uint(p, size, big_endian);
  switch (kind) {
  case ELEM_U8: case ELEM_U16: case ELEM_U32: case ELEM_U64: case ELEM_BOOL:
    return (double)u;
  case ELEM_I8: return (double)(int8_t)u;
  case ELEM_I16: return (double)(int16_t)u;
  case ELEM_I32: return (double)(int32_t)u;
  case ELEM_I64: return (double)(int64_t)u;
  case ELEM_F32: {
    uint32_t w = (uint32_t)u;
    float f;
    memcpy(&f, &w, 4);
    return f;
  }
  case ELEM_F64: {
    double d;
    memcpy(&d, &u, 8);
    return d;
  }
  }
  return 0.0;
}

#endif
