#include "kernrand.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#include <openssl/crypto.h>

int kernrand_bytes(void *buf, size_t n)
{
        uint8_t *p = buf;
        size_t got = 0;
        while (got < n) {
                ssize_t r = getrandom(p + got, n - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        /* 0 bytes for a non-zero request is not progress:
                         * refuse rather than spin. */
                        int e = r < 0 ? -errno : -EIO;
                        OPENSSL_cleanse(buf, n);
                        return e;
                }
                got += (size_t)r;
        }
        return 0;
}
