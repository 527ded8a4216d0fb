-- HiBench's scan (Pavlo et al.'s selection task without its filter): copy the large table whole.
-- HiBench: INSERT OVERWRITE TABLE uservisits_copy SELECT * FROM uservisits; the Spark job writes the result
-- to HDFS as that INSERT does.
SELECT * FROM uservisits
