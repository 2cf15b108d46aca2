// The kernel's netlink route interface (rtnetlink(7)): header only, nothing to link.
// <sys/socket.h> stays out: Glibc already gives Swift the socket calls and constants.
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
