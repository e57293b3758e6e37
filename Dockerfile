# syntax=docker/dockerfile:1
# gangplan's gRPC service as a small, non-root image:
#   docker build -t gangplan:0.1.0 .
#   docker run -p 50051:50051 -p 9464:9464 -e GANGPLAN_TOKEN=... gangplan:0.1.0
# Stage 1 builds the wheel (one import name, `gangplan`) and installs it, with the exact
# versions CI tests (constraints.txt), into a virtual environment; stage 2 copies only that.

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md hatch_build.py constraints.txt ./
COPY gangplan/ gangplan/
COPY solver/ solver/
COPY server/ server/
COPY clients/ clients/
COPY proto/ proto/
RUN pip install --no-cache-dir -c constraints.txt hatchling \
 && pip wheel --no-cache-dir --no-deps --no-build-isolation -w /wheels . \
 && python -m venv /opt/gangplan \
 && /opt/gangplan/bin/pip install --no-cache-dir -c constraints.txt /wheels/gangplan-*.whl

FROM python:3.11-slim-bookworm
COPY --from=build /opt/gangplan /opt/gangplan
# Listen on every interface in a container. With metrics off loopback the server requires
# GANGPLAN_TOKEN (gRPC and /metrics both want `Authorization: Bearer <token>`).
ENV PATH=/opt/gangplan/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GANGPLAN_HOST=0.0.0.0 \
    GANGPLAN_PORT=50051 \
    GANGPLAN_METRICS_HOST=0.0.0.0 \
    GANGPLAN_METRICS_PORT=9464
USER 65532:65532
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["gangplan", "health", "--server", "127.0.0.1:50051"]
ENTRYPOINT ["gangplan", "serve"]
