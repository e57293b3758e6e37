# syntax=docker/dockerfile:1
# gangplan's gRPC service as a small, non-root image:
#   docker build -t gangplan:0.1.0 .
#   docker run --rm -p 50051:50051 -p 9464:9464 -e GANGPLAN_TOKEN="$(openssl rand -hex 32)" gangplan:0.1.0
# Stage 1 builds the wheel (one import name, `gangplan`) and installs it, with the exact
# versions CI tests (constraints.txt), into a virtual environment; stage 2 copies only that
# environment: no pip, build tools or sources in the image. Both stages use one base image,
# so the environment's `python` link resolves. Python 3.11: the version CI runs.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md hatch_build.py constraints.txt ./
COPY gangplan/ gangplan/
COPY solver/ solver/
COPY server/ server/
COPY clients/ clients/
COPY proto/ proto/
# The libraries' own test suites (pandas and numpy: ~60 MB) are never imported by the server.
RUN pip install -c constraints.txt hatchling \
 && pip wheel --no-deps --no-build-isolation -w /wheels . \
 && python -m venv --without-pip /opt/gangplan \
 && pip --python /opt/gangplan/bin/python install -c constraints.txt /wheels/gangplan-*.whl \
 && rm -rf /opt/gangplan/lib/python3*/site-packages/pandas/tests \
 && find /opt/gangplan/lib/python3*/site-packages/numpy -depth -type d -name tests -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="gangplan" \
      org.opencontainers.image.description="Placement optimizer for gang-scheduled jobs, served over gRPC" \
      org.opencontainers.image.licenses="Apache-2.0"
# root-owned and read-only to the user the server runs as
COPY --from=build /opt/gangplan /opt/gangplan
# Listen on every interface in a container. With /metrics off loopback the server requires
# GANGPLAN_TOKEN (gRPC and /metrics both want `Authorization: Bearer <token>`). The SIGTERM
# drain (GANGPLAN_GRACE) stays under `docker stop`'s default 10 s before SIGKILL; an
# orchestrator with a longer termination grace period raises it (deploy/deployment.yaml).
ENV PATH=/opt/gangplan/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GANGPLAN_HOST=0.0.0.0 \
    GANGPLAN_PORT=50051 \
    GANGPLAN_METRICS_HOST=0.0.0.0 \
    GANGPLAN_METRICS_PORT=9464 \
    GANGPLAN_GRACE=8
USER 65532:65532
EXPOSE 50051 9464
# grpc.health.v1 Check of GANGPLAN_HOST:GANGPLAN_PORT (clients/probe.py: ~0.1 s of CPU per
# run, where `gangplan health` loads the solver first); -P: a `gangplan/` folder in the
# working directory is not imported in place of the installed package
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-P", "-m", "gangplan.clients.probe"]
ENTRYPOINT ["gangplan", "serve"]
