# Mirrors the README's install command: a virtualenv with the project, `hindsight serve`.
# The embedded PostgreSQL keeps its data in the /data volume; set HINDSIGHT_API_DATABASE_URL
# to use an external PostgreSQL with pgvector instead.
FROM python:3.11-slim

RUN useradd --create-home --uid 10001 hindsight \
    && mkdir -p /data && chown hindsight:hindsight /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY hindsight ./hindsight
COPY migrations ./migrations
# EXTRAS=[multilingual] adds the multilingual embedding model (HINDSIGHT_API_EMBEDDING_MODEL).
ARG EXTRAS=""
RUN python -m venv /app/.venv && /app/.venv/bin/pip install --no-cache-dir ".${EXTRAS}"

USER hindsight
# Make the int8 embedding model now (cached in ~/.cache/hindsight), not at every container start.
RUN /app/.venv/bin/python -c "from hindsight.embedding import load_embedder; load_embedder()"
ENV HINDSIGHT_API_HOST=0.0.0.0 \
    HINDSIGHT_API_PORT=8888 \
    HINDSIGHT_API_DATA_DIR=/data \
    XDG_RUNTIME_DIR=/tmp \
    PATH=/app/.venv/bin:$PATH
VOLUME ["/data"]
EXPOSE 8888
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8888/ready', timeout=4).status == 200 else 1)"
CMD ["hindsight", "serve"]
