"""The operator commands behind the ``sitemap-updater`` console script: one module each.

``cli.py`` is the argparse front; these modules do the work. Everything that talks to AWS
resolves its deployment through :mod:`sitemap_updater.ops.resolve` (stack outputs or
flags); the offline commands (``build``, ``validate``) need no AWS at all.
"""
