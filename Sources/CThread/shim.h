// glibc's thread-naming call, which Swift's Glibc module leaves out (it is a GNU
// extension and that module is built without _GNU_SOURCE). Declared here; libc defines
// it (glibc 2.12 and later), so there is nothing to link.
#include <pthread.h>

extern int pthread_setname_np(pthread_t thread, const char *name);

// eventfd(2), which Swift's Glibc module does not bring in: a `Doorbell`'s descriptor.
#include <sys/eventfd.h>
