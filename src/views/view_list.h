/*
 * view_list.h - the views diskmon has, one line each: DM_VIEW(name) names
 * the struct dm_view_ops dm_<name>_view that views/<name>'s file defines.
 * The order is the order the printer feeds them and the end of the run
 * finishes them: --metrics says a failed last write before the summary is
 * printed. Included with DM_VIEW defined: by view.h for the declarations,
 * by core/pipeline.c for the table it builds the views from. No include
 * guard: it is meant to be read more than once.
 */
DM_VIEW(top)      /* --top: views/top_view.c */
DM_VIEW(metrics)  /* --metrics: views/metrics_view.c */
DM_VIEW(pictures) /* --heatmap, --offset-map, --report: views/pictures_view.c */
DM_VIEW(summary)  /* -s, --hist: views/summary.c */
