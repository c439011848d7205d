/* placeholder */
#include "dmtest.h"
const struct dmt_case dm_suite_linux_requests[] = {{NULL, NULL}};
