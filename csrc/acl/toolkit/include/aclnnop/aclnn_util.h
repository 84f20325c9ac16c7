/* npusim's aclnn: the export macro of the operator headers (CANN's aclnnop/aclnn_util.h). */
#ifndef NPUSIM_ACLNNOP_ACLNN_UTIL_H_
#define NPUSIM_ACLNNOP_ACLNN_UTIL_H_

#if defined(__GNUC__)
#define ACLNN_API __attribute__((visibility("default")))
#else
#define ACLNN_API
#endif

#endif /* NPUSIM_ACLNNOP_ACLNN_UTIL_H_ */
