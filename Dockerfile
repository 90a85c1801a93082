# nel's container images, built from this repository (make image).
#
#   docker build -t nel .                          nel and nel-run on distroless (the default target)
#   docker build --target sandbox -t nel-sandbox . the same with bubblewrap and python3, for the
#                                                  local sandbox (sandbox: {type: local})
#
# The binaries are static (CGO_ENABLED=0), built as `make build` builds
# them. nel compile -t k8s --image IMAGE runs nel-run from this image.

# Kept equal to go.mod's go line (deploy/dockerfile_test.go checks).
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The image has no .git (see .dockerignore): make image passes what
# `make build` would read from it.
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
RUN make build VERSION="${VERSION}" COMMIT="${COMMIT}" DATE="${DATE}" \
 && ./bin/nel --version && ./bin/nel-run --version

# The local sandbox runs model-written code under bubblewrap, which needs
# a distribution's bwrap and the python3 the programs run with. bwrap
# makes user namespaces: run the container with them allowed (e.g.
# docker run --security-opt seccomp=unconfined, or a pod that may).
FROM debian:bookworm-slim AS sandbox
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --create-home nonroot
COPY --from=build /src/bin/nel /src/bin/nel-run /usr/local/bin/
USER 65532:65532
WORKDIR /workspace
ENTRYPOINT ["nel"]

# The default: only the two static binaries, CA certificates and a
# non-root user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot AS nel
COPY --from=build /src/bin/nel /src/bin/nel-run /usr/local/bin/
WORKDIR /workspace
ENTRYPOINT ["nel"]
