package main

import "github.com/alecthomas/kong"

// flagGroups title the group:"..." keys of the declarations; help lists
// them in this order.
var flagGroups = []kong.Group{
	{Key: "catalogs", Title: "Catalogs:"},
	{Key: "store", Title: "Store:"},
	{Key: "registries", Title: "Registries (how images are read):"},
	{Key: "syncs", Title: "Syncs:"},
	{Key: "http", Title: "Serving:"},
	{Key: "access", Title: "Access and TLS:"},
	{Key: "gc", Title: "Garbage collection:"},
	{Key: "log", Title: "Logging:"},
}
