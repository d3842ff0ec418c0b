# syntax=docker/dockerfile:1

# Herald's production image: one static binary on distroless.
#
#   docker build -t herald .
#   docker run --rm -e DATABASE_URL=... -e HERALD_SECRET_KEY=... -e HERALD_SESSION_KEY=... \
#     -e HERALD_BASE_URL=... -p 8080:8080 herald                  # herald serve (web + workers)
#   docker run --rm -e DATABASE_URL=... ... herald herald migrate
#
# No ENTRYPOINT on purpose: the binary is on PATH and CMD is the whole
# command, so fly.toml's process commands ("herald web", "herald worker") and
# release_command ("herald migrate") replace CMD as written. Fly keeps an
# image's ENTRYPOINT and only replaces CMD, so ENTRYPOINT ["/herald"] would
# have run "/herald herald web".

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0

# Module downloads and compiled packages live in BuildKit cache mounts, so they
# survive source and go.mod changes and a rebuild fetches only new modules.
# There is no separate `go mod download` step on purpose: go.mod also lists
# the dev tools (go-task, templ) with some 120 modules the binary never uses;
# `go build` fetches only the ~50 it needs.
# templ's *_templ.go files are committed: no code generation needed here.
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/herald .

# distroless static: CA certificates (Herald calls HTTPS APIs), tzdata,
# /etc/passwd with the nonroot user (65532), no shell.
FROM gcr.io/distroless/static-debian12:nonroot
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    HERALD_ENV=prod \
    HERALD_ADDR=:8080
COPY --from=build /out/herald /usr/local/bin/herald
USER nonroot:nonroot
EXPOSE 8080
CMD ["herald", "serve"]
