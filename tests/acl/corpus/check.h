/* Self-checking helpers of the AscendCL corpus: each program prints what failed and exits 1. */
#ifndef NPUSIM_ACL_CORPUS_CHECK_H_
#define NPUSIM_ACL_CORPUS_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"

#define CHECK_ACL(call)                                                                              \
    do {                                                                                             \
        aclError check_acl_code_ = (call);                                                           \
        if (check_acl_code_ != ACL_SUCCESS) {                                                        \
            const char *check_acl_text_ = aclGetRecentErrMsg();                                      \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call,               \
                    (int)check_acl_code_, check_acl_text_ != NULL ? check_acl_text_ : "no message"); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

#define EXPECT_CODE(expected, call)                                                                  \
    do {                                                                                             \
        aclError expect_code_ = (call);                                                              \
        if (expect_code_ != (expected)) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call,       \
                    (int)expect_code_, (int)(expected));                                             \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

#define EXPECT_TRUE(condition)                                                         \
    do {                                                                               \
        if (!(condition)) {                                                            \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #condition);   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#endif /* NPUSIM_ACL_CORPUS_CHECK_H_ */
