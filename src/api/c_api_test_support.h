/* What the C API's test programs share: CHECK, which counts a failed condition in `failures`
 * and prints it with parley_last_error(), so that one run reports every failure. Plain C. */
#ifndef PARLEY_C_TEST_CHECK_H
#define PARLEY_C_TEST_CHECK_H

#include <stdio.h>

#include <parley/parley.h>

static int failures = 0;

#define CHECK(condition)                                                                \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__, __LINE__, \
              #condition, parley_last_error());                                         \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

#endif
