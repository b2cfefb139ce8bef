#!/usr/bin/env python3
"""CDK entry point (cdk.json): ``cdk synth -c site_url=https://www.example.com`` from infra/."""

from sitemap_infra.app import main

main()
