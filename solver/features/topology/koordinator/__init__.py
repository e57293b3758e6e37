"""Koordinator: the ClusterNetworkTopology spec of a gang, its gather (offer slots), the
network-topology selector scores."""
