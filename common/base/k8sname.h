/* Kubernetes' syntax rules for the names and values this project writes into
 * pods, so bad configuration fails at start, not at the API server. */
#pragma once

#include <stdbool.h>

/* RFC 1123 label: container and volume names. */
bool k8s_is_dns1123_label(const char *s);
/* RFC 1123 subdomain: most object names (Secrets, webhook configurations). */
bool k8s_is_dns1123_subdomain(const char *s);
/* A label or annotation key: [prefix/]name. */
bool k8s_is_qualified_name(const char *s);
/* A label value: empty, or up to 63 characters of [A-Za-z0-9._-] with
 * alphanumeric ends. */
bool k8s_is_label_value(const char *s);
/* A non-negative resource quantity: "50m", "64Mi", "1.5", "1e3". */
bool k8s_is_quantity(const char *s);
/* The value of a quantity (k8s_is_quantity's syntax) as a number of units:
 * "50m" is 0.05, "64Mi" 67108864, "1e3" 1000. 0, or -EINVAL for anything
 * else. For comparing what was written with what the API server stores (it
 * writes quantities in its canonical form: "0.05" becomes "50m"). */
int k8s_quantity_value(const char *s, long double *ret);
