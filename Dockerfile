# Build a static binary, then ship it alone on scratch with CA certificates
# and a non-root user.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/catalogsync ./cmd/catalogsync \
 && mkdir -p /out/tmp /out/var/lib/catalogsync \
 && chmod 1777 /out/tmp && chown 65532:65532 /out/var/lib/catalogsync

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build /out/var /var
COPY --from=build /out/catalogsync /usr/local/bin/catalogsync
USER 65532:65532
ENV CATALOGSYNC_STORE=/var/lib/catalogsync CATALOGSYNC_TMP_DIR=/tmp HOME=/tmp
# serve listens on $PORT (Knative sets it), default 8080.
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/catalogsync"]
CMD ["serve"]
