# An application image: the application binary on a minimal non-root base.
#
#   docker build --build-arg APP=./examples/wordcount -t registry.example/wordcount:1.0 .
#
# The binary is /app/<name of APP's directory>; submit it as local:///app/<name>.
# The same image runs the driver (cluster mode) and the executors.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
ARG APP=./examples/wordcount
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ "${APP}"

# distroless/static: no shell, no package manager; user nonroot (65532),
# which runAsNonRoot and the restricted Pod Security profile accept.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /app/
USER 65532:65532
