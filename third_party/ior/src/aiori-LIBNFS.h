#ifndef _AIORI_LIBNFS_H
#define _AIORI_LIBNFS_H

/************************** O P T I O N S *****************************/

typedef struct {
    char *url;
} libnfs_options_t;

#endif