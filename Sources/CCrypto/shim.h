#ifndef ARIATA_CCRYPTO_SHIM_H
#define ARIATA_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto: SHA-1 for the name-based (v5) UUIDs of batch ids; Ed25519 for the
   device's iroh identity (its public key from its seed) and random bytes for the seed. */
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#endif
