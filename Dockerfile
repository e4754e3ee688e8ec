# The runner image: acp-journeys installed, with the static helpers (holder, relay) that it copies
# into every agent container, and the reference agent at /opt/acp-journeys/reference_agent.py.
# It is also a general-runtime agent image (python3), for run.sh. /acp-journeys-shared (1777) is
# where run.sh mounts the volume that holds the MCP sockets: a fresh volume takes that mode.
#
# Public build:   docker build .             (the base image and PyPI are reached as usual)
# With no registry: scripts/setup/build-runner-image.sh builds from a context folder that holds
# wheels/ (downloaded on the host) and passes a locally built base as BASE_IMAGE.
# The base by digest (python:3.12-slim: Python 3.12.14 on Debian trixie; bump it together with
# requirements/runner.txt), so that the fallback build is the same on every machine; a
# local build passes its own BASE_IMAGE.
ARG BASE_IMAGE=python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea

FROM ${BASE_IMAGE} AS helpers
# A debootstrap base has no compiler: take gcc and the static libc from Debian's packages then.
RUN if ! printf 'int main(void){return 0;}\n' | gcc -static -x c -o /tmp/probe - 2>/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
        && rm -rf /var/lib/apt/lists/*; \
    fi
COPY src/acp_journeys/launch/agent_side/ /helpers-src/
RUN mkdir -p /helpers \
    && for name in holder relay; do \
        gcc -static -O2 -Wall -Wextra -o /helpers/$name /helpers-src/$name.c && strip /helpers/$name; \
    done

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 PIP_BREAK_SYSTEM_PACKAGES=1 \
    ACP_JOURNEYS_HELPERS=/opt/acp-journeys/helpers ACP_JOURNEYS_IN_CONTAINER=1
COPY . /tmp/ctx
# With wheels/ in the context: install from it alone (no registry), bootstrapping pip from its
# own wheel when the base has none. Without it: the locked requirements, each checked against its
# hashes (requirements/runner.txt, made by scripts/release/lock-runner-requirements.sh), then
# acp-journeys itself with no other download.
RUN set -e; cd /tmp/ctx; \
    if ls wheels/*.whl >/dev/null 2>&1; then \
        if python3 -m pip --version >/dev/null 2>&1; then pip="python3 -m pip"; \
        else pip="python3 $(ls wheels/pip-*.whl | head -n1)/pip"; fi; \
        $pip install --no-index --find-links wheels acp-journeys; \
    else \
        python3 -m pip install --require-hashes --no-deps -r requirements/runner.txt; \
        python3 -m pip install --no-deps --no-build-isolation --no-index .; \
    fi; \
    mkdir -p /app && cp entrypoint.py /app/entrypoint.py; \
    pkg="$(python3 -c 'import acp_journeys, os; print(os.path.dirname(acp_journeys.__file__))')"; \
    mkdir -p /opt/acp-journeys && cp "$pkg/demo/reference_agent.py" /opt/acp-journeys/reference_agent.py; \
    mkdir -p -m 1777 /acp-journeys-shared; \
    cd / && rm -rf /tmp/ctx
COPY --from=helpers /helpers/ /opt/acp-journeys/helpers/
WORKDIR /work
ENTRYPOINT ["python3", "/app/entrypoint.py"]
