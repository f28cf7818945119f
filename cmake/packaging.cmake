# Debian packages (CPack DEB), one per install component:
#
#   hangar-sidecar   hangar-driver, hangar-relay, hangar-probe: what an
#                    environment image needs (docs/images.md)
#   hangar-webhook   hangar-webhook: what the webhook image is made of
#   hangar-client    hangar: hangar's side (the orchestrator's host), never
#                    in an image: it execs into pods through the API
#
# `cpack -G DEB` (or `ninja package`) in a build dir writes
# hangar-sidecar_VERSION_ARCH.deb, hangar-webhook_VERSION_ARCH.deb and
# hangar-client_VERSION_ARCH.deb.
# Depends comes from the binaries' shared libraries (dpkg-shlibdeps, from
# dpkg-dev), so it names the very library packages this machine linked against.
# Binaries are stripped. With SOURCE_DATE_EPOCH set, cpack stamps the archives'
# members with it. scripts/build-images.sh builds the images from these.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hangar-sidecar)
set(CPACK_PACKAGE_VENDOR "hangar-sidecar")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "hangar-sidecar maintainers <hangar-sidecar@localhost>")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL sidecar webhook client)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")

set(CPACK_DEBIAN_SIDECAR_PACKAGE_NAME hangar-sidecar)
set(CPACK_COMPONENT_SIDECAR_DESCRIPTION
    "hangar sidecar binaries for agent environment images
hangar-driver (the turn's driver, run in the hangar-driver sidecar container
as its own uid), hangar-relay (its agent-side end, over a token-checked
loopback relay) and hangar-probe (checks the sandbox pod's shape from inside
each container and decides HANGAR_UID_SPLIT). Install it in an environment
image: the injected sidecar runs that same image, so nothing new is pulled.")

set(CPACK_DEBIAN_WEBHOOK_PACKAGE_NAME hangar-webhook)
set(CPACK_COMPONENT_WEBHOOK_DESCRIPTION
    "hangar mutating admission webhook
hangar-webhook injects the hangar-driver sidecar container and its volumes
into hangar sandbox pods. Usually run from the hangar-webhook image by the
Helm chart.")

set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME hangar-client)
set(CPACK_COMPONENT_CLIENT_DESCRIPTION
    "hangar client for the orchestrator's host
hangar speaks the Kubernetes API itself (kubeconfigs, exec credential
plugins, in-cluster credentials; pods/exec over WebSocket) and prints JSON
lines: hangar exec, and hangar pod check, which decides the uid split's
verdict for a sandbox pod and delivers it to the driver sidecar.")

include(CPack)

# The binaries the packages ship: `ninja hangar-shipped` builds exactly
# what cpack (and so scripts/build-images.sh) needs, without the tests.
add_custom_target(hangar-shipped)
add_dependencies(hangar-shipped hangar-webhook hangar-driver hangar-relay hangar-grade hangar-probe hangar)
