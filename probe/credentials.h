/* Reader: the API tokens in this container and what the API server answers
 * about each (probe/rbac.h says what is asked). Finds tokens at the service
 * account's standard path, in every kubelet-written volume (a mount whose
 * directory holds "..data": secret, projected, configMap, downwardAPI), in a
 * file mounted on its own (subPath), and in environment variables. Records
 * the answers as they came; probe/checks.c judges them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "mountinfo.h"
#include "rbac.h"

#define CREDS_MAX_TOKENS 8
#define CREDS_TOKEN_MAX  16384 /* a JWT of a bound token is about 1 KiB */

typedef struct creds_reply {
        bool transport_failed; /* no HTTP answer: error says why */
        char error[192];
        long status;
        json_t *body; /* NULL if empty or not JSON */
} creds_reply_t;

typedef struct creds_token {
        char source[320];    /* a path, or "environment variable NAME" */
        bool standard;       /* K8S_SA_DIR/token */
        char ca_source[320]; /* the CA the API server was verified with */
        char unasked[192];   /* why nothing could be asked (no CA, no address, unreadable) */
        bool reviewed;       /* review holds the SelfSubjectReview's answer */
        creds_reply_t review;
        char namespace[64];         /* where the questions were asked */
        char namespace_source[128]; /* where that namespace came from */
        char pod[254];              /* the pod named in the named questions, "" if none */
        char pod_source[64];        /* the token's bound pod, or the hostname */
        rbac_query_t queries[RBAC_MAX_QUERIES];
        creds_reply_t replies[RBAC_MAX_QUERIES];
        size_t nasked; /* replies[0..nasked) were asked, in queries order */
        size_t nqueries;
} creds_token_t;

typedef struct creds_observation {
        bool observed;          /* the search ran */
        char search_error[192]; /* a place that could not be searched: not a "none found" */
        bool standard_mounted;  /* K8S_SA_DIR/token exists */
        size_t volumes_searched;
        creds_token_t tokens[CREDS_MAX_TOKENS];
        size_t ntokens;
} creds_observation_t;

/* mounts: this container's mount table (NULL if unreadable: that is a
 * search_error). Never fails as a whole. */
void creds_observe(const mount_table_t *mounts, creds_observation_t *o);
void creds_free(creds_observation_t *o);

/* True if s (length n) looks like a JWT: three base64url segments, the
 * first a JSON object ("eyJ"), at most CREDS_TOKEN_MAX bytes. */
bool creds_looks_like_token(const char *s, size_t n);
