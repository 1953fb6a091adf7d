"""Generate "The claims" (claims-list.md) at build time from the claims list shipped with attnsym.

The page is :func:`attnsym.claims.catalogue.catalogue_markdown` — the same ``claims.toml`` that
``attnsym verify --list`` prints and whose statements the checks report.
"""

import mkdocs_gen_files

from attnsym.claims.catalogue import catalogue_markdown

with mkdocs_gen_files.open("claims-list.md", "w") as page:
    page.write(catalogue_markdown())
