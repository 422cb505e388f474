# Build the static binaries, then ship them alone on scratch with CA certificates
# and a non-root user. deploy/image/build.sh builds the same image without
# a container engine; test/deploy compares the two.
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg REVISION="$(git rev-parse HEAD)" -t catalogsync .
FROM golang:1.26 AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/catalogsync ./cmd/catalogsync \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/catalogsync-reader ./cmd/catalogsync-reader \
 && mkdir -p /out/etc /out/tmp /out/var/lib/catalogsync \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group \
 && chmod 1777 /out/tmp && chown 65532:65532 /out/var/lib/catalogsync

FROM scratch
ARG VERSION=dev
ARG REVISION
LABEL org.opencontainers.image.source="https://github.com/catalogsync/catalogsync" \
      org.opencontainers.image.title="catalogsync" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/etc /etc
COPY --from=build /out/tmp /tmp
COPY --from=build /out/var /var
COPY --from=build /out/catalogsync /usr/local/bin/catalogsync
# The read-only server of published catalogs: command: [catalogsync-reader].
COPY --from=build /out/catalogsync-reader /usr/local/bin/catalogsync-reader
USER 65532:65532
ENV PATH=/usr/local/bin CATALOGSYNC_STORE=/var/lib/catalogsync CATALOGSYNC_TMP_DIR=/tmp HOME=/tmp
# serve listens on $PORT (Knative sets it), default 8080.
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/catalogsync"]
CMD ["serve"]
