# Build the release binary, then run it in a slim image with the warehouse on a volume.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/tarn

FROM debian:bookworm-slim
RUN useradd --system --home /warehouse tarn && mkdir -p /warehouse && chown tarn /warehouse
COPY --from=build /src/target/release/tarn /usr/local/bin/tarn
USER tarn
VOLUME /warehouse
EXPOSE 5433
# Reachable from other machines, so passwords: the first start needs TARN_BOOTSTRAP_PASSWORD
# (the superuser role `tarn`), as PostgreSQL's image needs POSTGRES_PASSWORD.
ENV TARN_WAREHOUSE=/warehouse TARN_LISTEN=0.0.0.0:5433 TARN_AUTH=scram-sha-256 RUST_LOG=info
ENTRYPOINT ["/usr/local/bin/tarn"]
