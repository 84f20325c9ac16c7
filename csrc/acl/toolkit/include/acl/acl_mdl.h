/*
 * npusim's AscendCL: the model API header (CANN's acl/acl_mdl.h). npusim loads no offline
 * models (.om files); what this header brings is the model runtime instance (aclmdlRI) of
 * stream capture, declared in acl_rt.h as in recent CANN releases.
 */
#ifndef NPUSIM_ACL_ACL_MDL_H_
#define NPUSIM_ACL_ACL_MDL_H_

#include "acl_base.h"
#include "acl_rt.h"

#endif /* NPUSIM_ACL_ACL_MDL_H_ */
