/* Relative-tolerance assertion of the unit tests: fails with both values, the tolerance and the
 * relative error. Include after <cmocka.h>. */
#ifndef CDSE_TEST_ASSERT_REL_H
#define CDSE_TEST_ASSERT_REL_H

#include <math.h>

static inline void assert_rel_at(double actual, double expected, double rel, const char *file,
                                 int line)
{
    if (!(fabs(actual - expected) <= rel * fabs(expected))) {
        print_error(
            "%s:%d: actual %.17g, expected %.17g (relative tolerance %g, relative error %.3g)\n",
            file, line, actual, expected, rel, fabs(actual - expected) / fabs(expected));
        _fail(file, line);
    }
}
#define assert_rel(actual, expected, rel) assert_rel_at(actual, expected, rel, __FILE__, __LINE__)

#endif
