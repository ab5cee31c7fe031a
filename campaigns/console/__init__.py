"""The DM console: server-rendered HTMX pages beside the API (`campaigns.api`).

Views are thin: the API's access helpers decide who may touch what (404 for outsiders),
`campaigns.reads.selectors` decides what each reader sees, services do the writes.
"""
