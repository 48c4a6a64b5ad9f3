module github.com/dtpa/dtpa

go 1.26.8

require (
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/jedib0t/go-pretty/v6 v6.8.3
	github.com/klauspost/compress v1.20.3
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/sys v0.30.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/text v0.22.0 // indirect
)
