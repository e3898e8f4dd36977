# syntax=docker/dockerfile:1
#
# mcp-runtime container image: a static binary on distroless, run as a
# non-root user, listening on 0.0.0.0:8080.
#
#   docker build --build-arg VERSION="$(git describe --tags --always)" -t mcp-runtime .
#   docker run --rm -p 8080:8080 mcp-runtime
#
# Configuration is by environment (README.md, "Configuration"): DATABASE_URL,
# REDIS_URL, MCP_ADMIN_TOKEN, MCP_AUTH_MODE, MCP_CONFIG (a mounted YAML file),
# MCP_TLS_CERT_FILE / MCP_TLS_KEY_FILE. The Helm chart (helm/mcp-runtime) sets
# them from a ConfigMap and Secrets. test/deploy checks this file's shape.
#
# Both base images are pinned by tag. To pin by digest as well, resolve them
# (`docker buildx imagetools inspect IMAGE:TAG`) and write IMAGE:TAG@sha256:...

# ---- build: the Go toolchain matching go.mod, cross-compiling natively ----
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build

WORKDIR /src
# Static binary (no libc needed at run time); never fetch another toolchain.
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

# Only what ./cmd/api is built from (.dockerignore keeps tests out).
COPY cmd/ cmd/
COPY internal/ internal/
COPY migrations/ migrations/

# Set by BuildKit from --platform (empty: the build machine's own).
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/mcp-runtime ./cmd/api

# ---- runtime: no shell, no package manager, no sources ----
FROM gcr.io/distroless/static-debian12:nonroot AS runtime

ARG VERSION=dev
LABEL org.opencontainers.image.title="mcp-runtime" \
      org.opencontainers.image.description="Production MCP server (Streamable HTTP)" \
      org.opencontainers.image.source="https://github.com/mcp-runtime/mcp-runtime" \
      org.opencontainers.image.version="${VERSION}"

COPY --from=build /out/mcp-runtime /usr/local/bin/mcp-runtime

# distroless's "nonroot" user, by number so Kubernetes can check
# runAsNonRoot without resolving a name.
USER 65532:65532

# Listen on every interface inside the container (the default, 127.0.0.1,
# is unreachable from outside it). Logs are JSON on stderr.
ENV MCP_ADDR=0.0.0.0:8080 \
    MCP_LOG_FORMAT=json
EXPOSE 8080

# SIGTERM starts the graceful shutdown (shutdownGraceMs, 25 s by default).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/mcp-runtime"]
