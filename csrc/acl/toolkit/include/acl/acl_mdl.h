/*
 * npusim's AscendCL: the model API header (CANN's acl/acl_mdl.h), included by acl.h. npusim
 * loads no offline models (.om files), so nothing is declared here beyond the basic headers; the
 * model runtime instance of stream capture (aclmdlRI) is declared in acl_rt.h, as in recent CANN
 * releases.
 */
#ifndef NPUSIM_ACL_ACL_MDL_H_
#define NPUSIM_ACL_ACL_MDL_H_

#include "acl_base.h"
#include "acl_rt.h"

#endif /* NPUSIM_ACL_ACL_MDL_H_ */
