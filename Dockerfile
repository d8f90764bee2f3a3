# An application image: the application binary on a minimal non-root base.
#
#   docker build --build-arg APP=./examples/wordcount -t registry.example/wordcount:1.0 .
#
# The binary is /app/<name of APP's directory>; submit it as local:///app/<name>.
# The same image runs the driver (cluster mode) and the executors. `make image`
# builds the same image without Docker (hack/image); a test runs these steps
# and compares the two (internal/appimage, TestDockerfileMatchesBuilder).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
ARG APP=./examples/wordcount
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/bin/ "${APP}"
# The image's file system, made by the code make image runs: the binary at
# /app/<name>, users root and nonroot (65532), /tmp, /home/nonroot, and the CA
# certificates of this stage's Debian ca-certificates package.
RUN go run ./hack/image --binary "/out/bin/$(basename "${APP}")" --rootfs /out/rootfs

# Only that file system: no shell, no package manager; user nonroot (65532),
# which runAsNonRoot and the restricted Pod Security profile accept.
FROM scratch
COPY --from=build /out/rootfs/ /
USER 65532:65532
WORKDIR /home/nonroot
ENV PATH=/app
