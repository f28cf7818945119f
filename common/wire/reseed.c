#include "reseed.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "kernrand.h"

#define RESEED_KERNEL_BYTES 32u

int hg_rand_reseed(uint64_t restores)
{
        uint8_t adin[RESEED_KERNEL_BYTES + sizeof(restores)];
        int r = kernrand_bytes(adin, RESEED_KERNEL_BYTES);
        if (r < 0)
                return r;
        memcpy(adin + RESEED_KERNEL_BYTES, &restores, sizeof(restores));
        /* The primary first: the public and private DRBGs take their fresh
         * seed from it, so it must already be a clone's own. */
        EVP_RAND_CTX *drbg[] = {RAND_get0_primary(NULL), RAND_get0_public(NULL),
                                RAND_get0_private(NULL)};
        for (size_t i = 0; i < sizeof(drbg) / sizeof(drbg[0]); i++)
                if (!drbg[i] || EVP_RAND_reseed(drbg[i], 1, NULL, 0, adin, sizeof(adin)) != 1)
                        r = -EIO;
        OPENSSL_cleanse(adin, sizeof(adin));
        return r;
}
