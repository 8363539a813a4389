module github.com/headgate-go/headgate/core

go 1.26
