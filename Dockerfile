FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY brain brain
COPY api api
COPY optimizers optimizers
COPY collectors collectors
COPY migrations migrations
RUN pip install --no-cache-dir .
ENV BRAIN_HOST=0.0.0.0 BRAIN_PORT=8080
# 50001: DLRover's gRPC brain.Brain when BRAIN_GRPC_PORT is set (as in docker-compose.yml).
EXPOSE 8080 50001
CMD ["brain", "serve", "--migrate"]
