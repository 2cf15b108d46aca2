#ifndef ARIATA_CCURL_SHIM_H
#define ARIATA_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_share_setopt and curl_easy_getinfo are variadic macros/functions that Swift
   cannot call; these typed wrappers are all the shim there is. */
static inline CURLcode ariata_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ariata_curl_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ariata_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ariata_curl_setopt_writefn(CURL *h, size_t (*fn)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fn); }
static inline CURLcode ariata_curl_setopt_headerfn(CURL *h, size_t (*fn)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, fn); }
static inline CURLcode ariata_curl_setopt_readfn(CURL *h, size_t (*fn)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_READFUNCTION, fn); }
static inline CURLcode ariata_curl_setopt_seekfn(CURL *h, int (*fn)(void *, curl_off_t, int)) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, fn); }
static inline CURLcode ariata_curl_setopt_xferinfofn(CURL *h, int (*fn)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, fn); }
static inline CURLSHcode ariata_curl_share_setopt_long(CURLSH *h, CURLSHoption o, long v) { return curl_share_setopt(h, o, v); }
static inline CURLSHcode ariata_curl_share_setopt_ptr(CURLSH *h, CURLSHoption o, void *v) { return curl_share_setopt(h, o, v); }
static inline CURLSHcode ariata_curl_share_setopt_lockfn(CURLSH *h, void (*fn)(CURL *, curl_lock_data, curl_lock_access, void *)) { return curl_share_setopt(h, CURLSHOPT_LOCKFUNC, fn); }
static inline CURLSHcode ariata_curl_share_setopt_unlockfn(CURLSH *h, void (*fn)(CURL *, curl_lock_data, void *)) { return curl_share_setopt(h, CURLSHOPT_UNLOCKFUNC, fn); }
static inline CURLcode ariata_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ariata_curl_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

#endif
