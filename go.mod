module github.com/glidepath/glidepath

go 1.26.0
