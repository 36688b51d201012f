"""docker/compose.yaml, docker/build-images.sh and scripts/docker-smoke.sh agree with each other and with bgix
(no Docker needed: the files are read, not run; scripts/docker-smoke.sh runs them, docs/operations.md shows a run)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from service.server.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE["services"]


def _default(text: str) -> str:
    """`${VAR:-default}` → default (what compose and bash use when VAR is unset)."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


def test_the_images_are_those_build_images_sh_builds() -> None:
    script = (ROOT / "docker" / "build-images.sh").read_text(encoding="utf-8")
    built = {_default(m) for m in re.findall(r'^(?:IMAGE|MOTO_IMAGE)="(\$\{\w+:-[^}]*\})"', script, re.M)}
    assert len(built) == 2
    assert {_default(s["image"]) for s in SERVICES.values()} == built   # nothing from a registry


def test_every_service_the_smoke_script_checks_exists_and_ports_stay_on_loopback() -> None:
    smoke = (ROOT / "scripts" / "docker-smoke.sh").read_text(encoding="utf-8")
    named = set(re.findall(r"compose ps -q \"?([\w-]+)", smoke)) | set(
        re.findall(r"for svc in ([\w -]+); do", smoke)[0].split())
    assert named == set(SERVICES) == {"s3", "create-bucket", "spark-master", "spark-worker", "bgix"}
    published = [_default(p) for s in SERVICES.values() for p in s.get("ports", [])]
    assert published and all(p.startswith("127.0.0.1:") for p in published), published


def test_the_bucket_set_up_imports_only_what_the_image_installs() -> None:
    # It once imported boto3, which bgix[s3,spark] does not install: it crash-looped and bgix never started.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = {re.split(r"[<>=!\[; ]", d)[0].lower() for d in
                 project["dependencies"] + project["optional-dependencies"]["s3"]
                 + project["optional-dependencies"]["spark"]}
    code = "\n".join(SERVICES["create-bucket"]["command"])
    imported = set(re.findall(r"^\s*(?:import|from) (\w+)", code, re.M))
    assert imported and imported <= installed, imported - installed


def test_bgix_service_settings_exist() -> None:
    env = SERVICES["bgix"]["environment"]
    names = {f"BGIX_{name.upper()}" for name in Settings.model_fields}
    assert {k for k in env if k.startswith("BGIX_")} - names == set()
    assert (ROOT / "docker" / SERVICES["bgix"]["volumes"][0].split(":")[0]).is_dir()   # ./spark-conf
