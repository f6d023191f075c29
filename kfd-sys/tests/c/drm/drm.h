/*
 * Stand-in for <drm/drm.h>, which linux/kfd_ioctl.h includes but Debian's linux-libc-dev
 * does not ship (libdrm-dev installs it under libdrm/). kfd_ioctl.h only needs the kernel's
 * fixed-width types from it.
 */
#ifndef KFD_SYS_TEST_DRM_STANDIN_H
#define KFD_SYS_TEST_DRM_STANDIN_H
#include <linux/types.h>
#endif
