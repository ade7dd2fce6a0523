# vapc's container image: the static binary `make dist` builds, and nothing else. No base image
# is pulled: it is FROM scratch, and runs as an unprivileged user. Build and smoke-test it with
# `make image-test` (podman or buildah; hack/image-test.sh), or:
#
#   make dist-linux && podman build --build-arg TARGETARCH=amd64 -t vapc .
#   podman run --rm -v "$PWD:/work:ro" vapc check policies/
FROM scratch
ARG TARGETARCH=amd64
COPY dist/vapc-linux-${TARGETARCH} /usr/local/bin/vapc
# nobody's uid and gid in distroless images: no /etc/passwd is needed for a numeric user.
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/vapc"]
CMD ["help"]
