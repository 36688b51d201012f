# The compose stack's S3 endpoint: moto's server on the same local Debian base as bgix's image (the
# `motoserver/moto` image needs a registry). Built by docker/build-images.sh; pip settings as in docker/Dockerfile.
ARG BASE=bgix-base:bookworm

FROM ${BASE} AS system
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*

FROM system AS venv
COPY docker/pip/ /etc/bgix-build/pip/
ENV PIP_CONFIG_FILE=/etc/bgix-build/pip/pip.conf \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --upgrade pip \
 && /opt/venv/bin/pip install "moto[server]>=5.0,<6"

FROM system
COPY --from=venv /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 LANG=C.UTF-8
USER nobody
EXPOSE 5000
# In memory: every `compose up` starts with no bucket (the create-bucket service makes one).
CMD ["moto_server", "--host", "0.0.0.0", "--port", "5000"]
