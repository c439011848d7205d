/*
 * error.c - names and messages of dm_err codes, from the one table in
 * diskmon.h.
 */
#include "diskmon.h"

const char *dm_strerror(int err)
{
    switch (err) {
    case DM_OK:
        return "success";
#define DM_ERR_MSG(name, msg) \
    case DM_E##name:          \
        return msg;
        DM_ERR_MAP(DM_ERR_MSG)
#undef DM_ERR_MSG
    default:
        return "unknown error";
    }
}

const char *dm_err_name(int err)
{
    switch (err) {
    case DM_OK:
        return "DM_OK";
#define DM_ERR_NAME(name, msg) \
    case DM_E##name:           \
        return "DM_E" #name;
        DM_ERR_MAP(DM_ERR_NAME)
#undef DM_ERR_NAME
    default:
        return "DM_E?";
    }
}
