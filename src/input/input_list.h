/*
 * input_list.h - the formats diskmon reads, one line each: DM_INPUT(name)
 * names the struct dm_input_format dm_<name>_input that input/<file>
 * defines. The order is the order they are asked to recognise an input:
 * the ones with a magic number or a header first, the header-less public
 * traces last, each of whose first lines no earlier format takes. Included
 * with DM_INPUT defined: by input.h for the declarations, by input_list.c
 * for the table. No include guard: it is meant to be read more than once.
 */
DM_INPUT(etl)       /* .etl traces: input/etl_input.c, read by src/etl */
DM_INPUT(json)      /* diskmon -f json lines: input/dm_json.c */
DM_INPUT(csv)       /* diskmon -f csv: input/dm_csv.c */
DM_INPUT(systor)    /* SYSTOR '17 VDI traces: input/systor.c */
DM_INPUT(msr)       /* MSR Cambridge traces: input/msr.c */
DM_INPUT(tencent)   /* Tencent CBS traces: input/tencent.c */
