package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// The timeline's geometry, in SVG user units (pixels).
const (
	svgLabelW = 210 // the client names
	svgTrackW = 760 // the time axis
	svgNoteW  = 330 // the figures at the right
	svgPad    = 12
	svgRowH   = 22
	svgTickH  = 14
	svgHeadH  = 26 // a scenario's heading
	svgTopH   = 58 // title and time axis
	svgFootH  = 40 // legend
)

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// writeSVG draws every run as a row of tick marks, one per request the
// server received, over a common time axis from each run's start: admitted
// requests in blue, 429s in red and taller, the server's pause shaded, the
// ideal makespan dashed and the last call's return marked. It returns the
// path written.
func writeSVG(flagPath string, cfg config, results []result) (string, error) {
	path := svgTarget(flagPath)
	if err := os.WriteFile(path, renderSVG(cfg, results), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// renderSVG returns the timeline as a standalone SVG document.
func renderSVG(cfg config, results []result) []byte {
	// The axis spans the longest run, rounded up to a whole second, but no
	// more than twice the longest ideal: a run that goes on longer is cut
	// at the edge and its makespan written there, so that the paced rows
	// are not squeezed into a corner by a retry storm.
	var span, longestIdeal time.Duration
	for _, r := range results {
		span = max(span, r.makespan, r.ideal)
		longestIdeal = max(longestIdeal, r.ideal)
		if r.paused {
			span = max(span, r.pauseAt+cfg.pause)
		}
	}
	span = min(span, 2*longestIdeal)
	secs := max(1, int(math.Ceil(span.Seconds())))
	end := time.Duration(secs) * time.Second
	scale := float64(svgTrackW) / float64(secs) // pixels per second
	x := func(d time.Duration) float64 {
		return svgPad + svgLabelW + math.Max(0, math.Min(float64(svgTrackW), d.Seconds()*scale))
	}

	// Rows, grouped by scenario in the order they ran.
	var groups [][]result
	for i, r := range results {
		if i == 0 || r.scenario.name != results[i-1].scenario.name {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r)
	}
	height := svgTopH + svgFootH
	for _, g := range groups {
		height += svgHeadH + len(g)*svgRowH
	}
	width := 2*svgPad + svgLabelW + svgTrackW + svgNoteW

	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="%d" y="20" font-size="14" font-weight="600">headgate demo: %d calls from %d goroutines, server %d/s burst %d (GCRA); one row per client, one tick per request the server received</text>`+"\n",
		svgPad, cfg.n, cfg.workers, cfg.rate, cfg.burst)

	// Time axis: a grid line and a label every second.
	top, bottom := svgTopH-8, height-svgFootH
	for s := 0; s <= secs; s++ {
		xs := x(time.Duration(s) * time.Second)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e7eb"/>`+"\n", xs, top, xs, bottom)
		p(`<text x="%.1f" y="%d" text-anchor="middle" fill="#6b7280">%ds</text>`+"\n", xs, top-6, s)
	}

	y := svgTopH
	for _, g := range groups {
		s := g[0].scenario
		p(`<text x="%d" y="%d" font-weight="600">%s</text>`+"\n", svgPad, y+17, xmlEscaper.Replace(s.name+": "+s.title))
		y += svgHeadH
		for _, r := range g {
			y0 := y + (svgRowH-svgTickH)/2
			p(`<text x="%d" y="%d">%s</text>`+"\n", svgPad, y+15, xmlEscaper.Replace(r.client))
			p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f9fafb"/>`+"\n", x(0), y0, x(r.makespan)-x(0), svgTickH)
			if r.paused {
				p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#fde68a" fill-opacity="0.75"/>`+"\n",
					x(r.pauseAt), y+1, x(r.pauseAt+cfg.pause)-x(r.pauseAt), svgRowH-2)
			}
			var ok, refused strings.Builder
			for _, t := range r.ticks {
				if t.at > end {
					continue
				}
				if t.refused {
					fmt.Fprintf(&refused, "M%.1f %dv%d", x(t.at), y+1, svgRowH-2)
				} else {
					fmt.Fprintf(&ok, "M%.1f %dv%d", x(t.at), y0, svgTickH)
				}
			}
			if ok.Len() > 0 {
				p(`<path d="%s" stroke="#2563eb" stroke-width="0.6" stroke-opacity="0.8"/>`+"\n", ok.String())
			}
			if refused.Len() > 0 {
				p(`<path d="%s" stroke="#dc2626" stroke-width="0.8"/>`+"\n", refused.String())
			}
			p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#16a34a" stroke-width="1.5" stroke-dasharray="3 2"/>`+"\n",
				x(r.ideal), y, x(r.ideal), y+svgRowH)
			if r.makespan <= end {
				p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#111827" stroke-width="2"/>`+"\n",
					x(r.makespan), y+2, x(r.makespan), y+svgRowH-2)
			} else {
				p(`<text x="%.1f" y="%d" text-anchor="end" font-weight="600" fill="#111827">» %s</text>`+"\n",
					x(end)-2, y+15, fmtDur(r.makespan))
			}
			note := fmt.Sprintf("%d sent · %d × 429 · %.2f× ideal", r.sent, r.refused, r.ratio())
			if r.paused {
				note += fmt.Sprintf(" · %d in pause", r.inPause)
			}
			fill := "#111827"
			if r.refused > 0 {
				fill = "#b91c1c"
			}
			p(`<text x="%d" y="%d" fill="%s">%s</text>`+"\n", svgPad+svgLabelW+svgTrackW+10, y+15, fill, xmlEscaper.Replace(note))
			y += svgRowH
		}
	}

	// Legend.
	ly := height - svgFootH + 24
	lx := svgPad
	p(`<path d="M%d %dv12" stroke="#2563eb" stroke-width="2"/><text x="%d" y="%d">request admitted</text>`+"\n", lx, ly-10, lx+6, ly)
	lx += 130
	p(`<path d="M%d %dv16" stroke="#dc2626" stroke-width="2"/><text x="%d" y="%d">429 Too Many Requests</text>`+"\n", lx, ly-12, lx+6, ly)
	lx += 160
	p(`<rect x="%d" y="%d" width="16" height="14" fill="#fde68a"/><text x="%d" y="%d">server paused</text>`+"\n", lx, ly-11, lx+22, ly)
	lx += 120
	p(`<path d="M%d %dv16" stroke="#16a34a" stroke-width="1.5" stroke-dasharray="3 2"/><text x="%d" y="%d">ideal makespan (the server's limit)</text>`+"\n", lx, ly-12, lx+6, ly)
	lx += 230
	p(`<path d="M%d %dv16" stroke="#111827" stroke-width="2"/><text x="%d" y="%d">last call returned</text>`+"\n", lx, ly-12, lx+6, ly)
	p("</svg>\n")
	return b.Bytes()
}
