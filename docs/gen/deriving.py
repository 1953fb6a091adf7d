"""Generate the documentation page "Deriving attention" (deriving.md) at build time.

The page text, including the rendered n = 2, d_model = 2 derivation, comes from
:func:`attnsym.render.deriving_page`, so it is produced by the code, never typed by hand.
"""

import mkdocs_gen_files

import attnsym as at
from attnsym.render import deriving_page

with mkdocs_gen_files.open("deriving.md", "w") as page:
    page.write(deriving_page(at.derive(at.AttentionSpec(n=2, d_model=2))))
